"""DocsSource on real git repositories: sections, keys, commit dates, pruning, the no-op cursor."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem.config import defaults
from nexusmem.nodes import Node
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.docs import (
    TRUNCATION_MARKER,
    DocsSource,
    sections_of,
    split_asciidoc_sections,
    split_man_sections,
    split_org_sections,
    split_rst_sections,
    split_sections,
)

from helpers import commit, git, query_json, run_cli
from helpers.env import unreadable

GUIDE = """Intro text before any heading.

# Guide

Top level text.

## Install

Run the installer because the wheel is pure Python.

```sh
# not a heading: a shell comment in a fence
echo hi
```

~~~
## also not a heading
~~~

## Usage

Use it.

## Usage

Again, a repeated heading.

### Deep ###

Nested text.
"""


def scan(
    root: Path, cursor: str | None = None, full: bool = False, **limits: int
) -> tuple[ScanResult, list[Node]]:
    config = defaults()
    config["limits"].update(limits)
    result = DocsSource().scan(
        ScanContext(root=root, project_id="proj", config=config, cursor=cursor, full=full)
    )
    return result, list(result.nodes)


def held(memory: dict[str, Node], result: ScanResult, nodes: list[Node]) -> dict[str, Node]:
    """MEMORY (natural key → node) after a sync applies one scan: what its keep() rejects goes, what it
    emitted is written (a file the scan did not read again keeps its sections)."""
    kept = {key: node for key, node in memory.items() if result.keep is None or result.keep(key)}
    return {**kept, **{node.natural_key: node for node in nodes}}


def dates(memory: dict[str, Node]) -> dict[str, int]:
    return {n.meta["path"]: n.ts for n in memory.values()}


def indexed(tmp_path: Path, files: dict[str, str]) -> dict[str, Node]:
    """The doc nodes, by ref, of a fresh repository holding FILES in one commit."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "docs", files)
    return {n.ref: n for n in scan(root)[1]}


def by_key(nodes: list[Node]) -> dict[str, Node]:
    return {n.natural_key: n for n in nodes}


def test_sections_split_at_headings_and_fences_ignored(repo: Path) -> None:
    commit(repo, "docs: guide", {"docs/guide.md": GUIDE}, when=1_700_000_000)
    _, nodes = scan(repo)
    keys = [n.natural_key for n in nodes]
    assert keys == [
        "docs/guide.md#guide.md#0",
        "docs/guide.md#Guide#0",
        "docs/guide.md#Guide > Install#0",
        "docs/guide.md#Guide > Usage#0",
        "docs/guide.md#Guide > Usage#1",
        "docs/guide.md#Guide > Usage > Deep#0",
    ]
    nodes_by_key = by_key(nodes)
    install = nodes_by_key["docs/guide.md#Guide > Install#0"]
    assert "# not a heading" in install.body and "## also not a heading" in install.body
    assert install.ref == "docs/guide.md#Install"
    assert install.title == "docs/guide.md — Install"
    assert install.meta == {"path": "docs/guide.md", "heading": "Install", "level": 2, "line": 7}
    assert install.group == "docs/guide.md" and install.files == ("docs/guide.md",)
    assert install.signal == 0.7  # "because": the text explains itself
    deep = nodes_by_key["docs/guide.md#Guide > Usage > Deep#0"]
    assert deep.ref == "docs/guide.md#Deep" and deep.meta["level"] == 3
    preamble = nodes_by_key["docs/guide.md#guide.md#0"]
    assert preamble.title == "docs/guide.md — guide.md" and preamble.meta["level"] == 0
    assert len({n.id for n in nodes}) == len(nodes)


def test_setext_headings_and_front_matter() -> None:
    text = "---\ntitle: x\n---\n\nTitle\n=====\n\nbody\n\nSub\n---\n\nmore\n"
    sections = split_sections(text, "f.md")
    assert [(s.heading, s.level) for s in sections] == [("f.md", 0), ("Title", 1), ("Sub", 2)]


def test_ts_is_last_commit_touching_the_file_not_mtime(repo: Path) -> None:
    commit(repo, "a", {"a.md": "# A\n\none\n", "b.md": "# B\n\nbee\n"}, when=1_600_000_000)
    commit(repo, "a again", {"a.md": "# A\n\ntwo\n"}, when=1_650_000_000)
    commit(repo, "unrelated", {"code.py": "x = 1\n"}, when=1_700_000_000)
    (repo / "new.md").write_text("# New\n\nuntracked\n", encoding="utf-8")
    os.utime(repo / "new.md", ns=(1_234_567_890_000_000_000, 1_234_567_890_000_000_000))
    _, nodes = scan(repo)
    ts = {n.meta["path"]: n.ts for n in nodes}
    assert ts == {"a.md": 1_650_000_000_000, "b.md": 1_600_000_000_000, "new.md": 1_234_567_890_000}


def record_walks(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The git commands the docs source streams from here on (its history walks), recorded as they run."""
    from nexusmem.sources import docs as docs_mod

    walks: list[list[str]] = []
    real_stream = docs_mod.gitcmd.stream

    def recorded(args: list[str], root: Path) -> Any:
        walks.append(args)
        return real_stream(args, root)

    monkeypatch.setattr(docs_mod.gitcmd, "stream", recorded)
    return walks


def test_a_sync_after_a_commit_dates_the_docs_from_the_new_commits_only(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every HEAD move walked the history again to date every doc file: on git/git, 30 s and 370 MB after
    each commit, for a code change. The times are kept in the cursor and only the new commits are walked;
    a rewrite (reset, rebase) walks again from the top."""
    commit(repo, "a", {"a.md": "# A\n\none\n", "b.md": "# B\n\nbee\n"}, when=1_600_000_000)
    commit(repo, "a again", {"a.md": "# A\n\ntwo\n"}, when=1_650_000_000)
    first, nodes = scan(repo)
    memory = held({}, first, nodes)
    assert dates(memory) == {"a.md": 1_650_000_000_000, "b.md": 1_600_000_000_000}
    walks = record_walks(monkeypatch)
    commit(repo, "code", {"code.py": "x = 1\n"}, when=1_700_000_000)
    second, nodes = scan(repo, first.cursor)
    assert nodes == []  # no doc file changed, nor its date: none is read again
    memory = held(memory, second, nodes)
    assert dates(memory) == {"a.md": 1_650_000_000_000, "b.md": 1_600_000_000_000}
    assert len(walks) == 1 and any(a.startswith("^") for a in walks[0]), walks  # the new commit only
    commit(repo, "b edited", {"b.md": "# B\n\nbeetle\n"}, when=1_750_000_000)
    third, nodes = scan(repo, second.cursor)
    assert {n.meta["path"] for n in nodes} == {"b.md"}
    memory = held(memory, third, nodes)
    assert dates(memory) == {"a.md": 1_650_000_000_000, "b.md": 1_750_000_000_000}
    git(repo, "reset", "-q", "--hard", "HEAD~2")  # history rewritten: b.md is back to its first version
    walks.clear()
    fourth, nodes = scan(repo, third.cursor)
    walked = list(walks)
    memory = held(memory, fourth, nodes)
    assert dates(memory) == {"a.md": 1_650_000_000_000, "b.md": 1_600_000_000_000}
    assert [n.body for n in memory.values() if n.meta["path"] == "b.md"] == [
        n.body for n in scan(repo)[1] if n.meta["path"] == "b.md"
    ]
    # The commits the reset left behind are read for what they touched (b.md), and b.md alone is dated
    # again from the top; a.md keeps its time.
    assert any(a.startswith("^") for a in walked[0]), walked
    from_the_top = [w for w in walked if not any(a.startswith("^") for a in w)]
    assert len(from_the_top) == 1 and [a for a in from_the_top[0] if a.endswith(".md")] == [":(literal)b.md"]


def test_an_amend_dates_the_docs_from_the_amended_commit_only(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `git commit --amend` (a rebase, a reset) the last sync's HEAD is no ancestor of this one, and
    every doc file was dated again by a walk from the top: 30 s on git/git after every amend of a code
    commit. The times found at the commit both histories share still stand: only the commits since it (the
    amended one, and the one it replaced) are read."""
    for i in range(6):
        commit(repo, f"step {i}", {f"doc{i}.md": f"# D{i}\n\n{i}\n"}, when=1_600_000_000 + i * 1000)
    commit(repo, "code", {"code.py": "x = 1\n"}, when=1_700_000_000)
    first, nodes = scan(repo)
    memory = held({}, first, nodes)
    walks = record_walks(monkeypatch)
    env = {"GIT_COMMITTER_DATE": "1710000000 +0000"}
    git(repo, "commit", "-q", "--amend", "-m", "code, amended", env=env)
    second, nodes = scan(repo, first.cursor)
    assert nodes == []
    memory = held(memory, second, nodes)
    assert dates(memory) == {f"doc{i}.md": (1_600_000_000 + i * 1000) * 1000 for i in range(6)}
    assert walks and all(any(a.startswith("^") for a in w) for w in walks), walks  # none from the top
    # An amend that edits a doc dates that doc by the amended commit; the rest keep theirs.
    (repo / "doc2.md").write_text("# D2\n\nedited\n", encoding="utf-8")
    git(repo, "add", "doc2.md")
    git(
        repo, "commit", "-q", "--amend", "-m", "code and doc2", env={"GIT_COMMITTER_DATE": "1720000000 +0000"}
    )
    third, nodes = scan(repo, second.cursor)
    memory = held(memory, third, nodes)
    full = {n.meta["path"]: n.ts for n in scan(repo)[1]}
    assert dates(memory) == full and full["doc2.md"] == 1_720_000_000_000
    # And amended back out of it: doc2.md is dated by its own first commit again, as a full walk says.
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit(repo, "code again", {"code.py": "x = 2\n"}, when=1_730_000_000)
    fourth, nodes = scan(repo, third.cursor)
    memory = held(memory, fourth, nodes)
    assert (
        dates(memory) == {n.meta["path"]: n.ts for n in scan(repo)[1]}
        and dates(memory)["doc2.md"] == 1_600_002_000_000
    )


def test_a_doc_in_a_folder_named_after_a_secret_is_dated_from_the_cursor_without_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cursor kept each doc's time under its path: a folder named after a token put the token in
    memory.db (its sources table), where neither forget nor scrub looks. It keeps a digest of such a path,
    and the next sync still finds the time there (the new commits only are walked)."""
    token = "xoxb-12345678901-123456789012-" + "QwErTyUiOpAsDfGhJkLzXcVb"
    commit(repo, "ops", {f"docs/{token}/ops.md": "# Ops\n\ntext\n"}, when=1_600_000_000)
    first, nodes = scan(repo)
    assert [n.ts for n in nodes] == [1_600_000_000_000]
    assert first.cursor and token not in first.cursor and "QwErTy" not in first.cursor
    memory = held({}, first, nodes)
    walks = record_walks(monkeypatch)
    commit(repo, "code", {"code.py": "x = 1\n"}, when=1_700_000_000)
    second, nodes = scan(repo, first.cursor)
    assert [n.ts for n in held(memory, second, nodes).values()] == [1_600_000_000_000]
    assert nodes == []  # found unchanged under the digest the cursor keeps
    assert len(walks) == 1 and any(a.startswith("^") for a in walks[0]), walks
    assert second.cursor and "QwErTy" not in second.cursor


def test_a_doc_whose_name_is_not_utf8_is_synced_and_dated(repo: Path, isolated_home: Path) -> None:
    """The cursor kept each doc's path as it was: a name that is not UTF-8 (read with surrogate escapes)
    could not be stored, and every sync of the repository stopped at the docs step (exit 3), so nothing
    after it (the shell commands) was ever recorded."""
    from helpers import query_json, run_cli

    name = os.fsdecode(b"caf\xe9.md")
    (repo / name).write_bytes(b"# Caf\xc3\xa9 notes\n\nGrind the beans first.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add the coffee notes", env={"GIT_AUTHOR_DATE": "1600000000 +0000"})
    for _ in range(2):  # the second sync reads the cursor the first one wrote
        run_cli("-C", str(repo), "sync", "--no-embed")
        items = query_json(repo, "grind the beans")["items"]
        assert items and items[0]["title"] == "caf\\xe9.md — Café notes", items[0]
        commit(repo, "code", {"code.py": "x = 1\n"})


def test_merging_an_older_branch_or_deepening_a_clone_dates_docs_as_a_full_walk_does(
    repo: Path, tmp_path: Path
) -> None:
    """Walking only the commits since the last sync, a merged branch's older edit replaced a newer date
    (guide.md went from March back to February), and a clone's shallow boundary date stayed after
    `git fetch --unshallow`; a walk from the top gives the newest commit of the whole history."""
    commit(repo, "guide", {"guide.md": "# Guide\n\none\n"}, when=1_767_225_600)  # 2026-01-01
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "feat edit", {"guide.md": "# Guide\n\nfeat\n"}, when=1_769_904_000)  # 2026-02-01
    git(repo, "checkout", "-q", "-")
    commit(repo, "main edit", {"guide.md": "# Guide\n\nmain\n", "x.txt": "x\n"}, when=1_772_323_200)  # 03-01
    first, nodes = scan(repo)
    memory = held({}, first, nodes)
    assert dates(memory) == {"guide.md": 1_772_323_200_000}
    env = {"GIT_AUTHOR_DATE": "1775000000 +0000", "GIT_COMMITTER_DATE": "1775000000 +0000"}
    git(repo, "merge", "-q", "--no-edit", "-X", "ours", "feat", env=env)
    after, nodes = scan(repo, first.cursor)
    assert dates(held(memory, after, nodes)) == {"guide.md": 1_772_323_200_000}
    # Resolved with the branch's version instead, the file's history follows the branch: as a full walk says.
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    first, nodes = scan(repo)
    memory = held({}, first, nodes)
    git(repo, "merge", "-q", "--no-edit", "-X", "theirs", "feat", env=env)
    merged, nodes = scan(repo, first.cursor)
    full = {n.meta["path"]: n.ts for n in scan(repo)[1]}
    assert dates(held(memory, merged, nodes)) == full == {"guide.md": 1_769_904_000_000}
    assert scan(repo, merged.cursor)[0].cursor == merged.cursor  # and the next sync has nothing to do
    # A shallow clone dates by its boundary; deepened, the same files get their real dates.
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    before, nodes = scan(shallow)
    assert {n.meta["path"]: n.ts for n in nodes} == {"guide.md": 1_775_000_000_000}
    git(shallow, "fetch", "-q", "--unshallow")
    _, nodes = scan(shallow, before.cursor)
    assert {n.meta["path"]: n.ts for n in nodes} == full


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_file_or_folder_named_head_at_the_root_changes_nothing(repo: Path, kind: str) -> None:
    """A tracked `HEAD` at the top of the work tree made git read the bare word HEAD as ambiguous: every
    sync failed (`git diff HEAD`: "both revision and filename"), and a merge since the last sync went
    unseen (`git rev-list HEAD`). Each revision NexusMem gives git is ended with `--`."""
    head = {"HEAD": "ref: refs/heads/x\n"} if kind == "file" else {"HEAD/notes.txt": "x\n"}
    commit(repo, "guide", {**head, "guide.md": "# Guide\n\none\n"}, when=1_767_225_600)  # 2026-01-01
    synced = run_cli("-C", str(repo), "sync", "--no-embed")
    assert synced.exit_code == 0, synced.output
    assert "guide.md — Guide" in [it["title"] for it in query_json(repo, "guide")["items"]]
    # A merge whose resolution is neither side's: a walk since the last sync must see that a merge came
    # (or the branch's older edit dates the guide), and date the guide as a full walk does (main's edit).
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "feat edit", {"guide.md": "# Guide\n\nfeat\n"}, when=1_769_904_000)  # 2026-02-01
    git(repo, "checkout", "-q", "main")
    commit(repo, "main edit", {"guide.md": "# Guide\n\nmain\n", "x.txt": "x\n"}, when=1_772_323_200)
    first, _ = scan(repo)
    git(repo, "merge", "-q", "--no-commit", "-X", "ours", "feat")
    commit(repo, "merge feat", {"guide.md": "# Guide\n\nboth\n"}, when=1_775_000_000)
    _, nodes = scan(repo, first.cursor)
    assert {n.meta["path"]: n.ts for n in nodes} == {"guide.md": 1_772_323_200_000}
    assert run_cli("-C", str(repo), "sync", "--no-embed").exit_code == 0


def test_a_doc_a_subtree_merge_brought_in_is_dated_by_the_merge(repo: Path, tmp_path: Path) -> None:
    """A file that arrived only through a merge (`git subtree add`) is named by no commit of a plain
    `git log`: it was dated by its checkout's mtime (the newest thing in memory), and forced a walk of
    the whole history at every sync."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    commit(lib, "lib", {"README.md": "# Lib\n\n## Lib usage\n\nx\n"}, when=1_500_000_000)
    commit(repo, "app", {"README.md": "# App\n\ny\n"}, when=1_600_000_000)
    git(repo, "fetch", "-q", str(lib), "HEAD")
    env = {"GIT_AUTHOR_DATE": "1650000000 +0000", "GIT_COMMITTER_DATE": "1650000000 +0000"}
    git(
        repo, "merge", "-q", "-s", "ours", "--no-commit", "--allow-unrelated-histories", "FETCH_HEAD", env=env
    )
    git(repo, "read-tree", "--prefix=libs/lib/", "-u", "FETCH_HEAD")
    git(repo, "commit", "-q", "-m", "Add libs/lib as a subtree", env=env)
    _, nodes = scan(repo)
    ts = {n.meta["path"]: n.ts for n in nodes}
    assert ts == {"README.md": 1_600_000_000_000, "libs/lib/README.md": 1_650_000_000_000}


def test_modified_uncommitted_file_uses_mtime(repo: Path) -> None:
    commit(repo, "a", {"a.md": "# A\n\none\n"}, when=1_600_000_000)
    (repo / "a.md").write_text("# A\n\nedited\n", encoding="utf-8")
    os.utime(repo / "a.md", ns=(1_111_111_111_000_000_000, 1_111_111_111_000_000_000))
    _, nodes = scan(repo)
    assert [n.ts for n in nodes] == [1_111_111_111_000]


def test_removed_section_and_deleted_file_are_rejected_by_keep(repo: Path) -> None:
    commit(repo, "docs", {"a.md": "# A\n\na\n\n## Gone\n\nsoon\n", "b.md": "# B\n\nb\n"})
    result, nodes = scan(repo)
    old_keys = {n.natural_key for n in nodes}
    assert "a.md#A > Gone#0" in old_keys
    (repo / "a.md").write_text("# A\n\na\n", encoding="utf-8")
    git(repo, "rm", "-q", "b.md")
    result2, nodes2 = scan(repo, cursor=result.cursor)
    assert [n.natural_key for n in nodes2] == ["a.md#A#0"]
    assert result2.keep is not None
    assert result2.keep("a.md#A#0")
    assert not result2.keep("a.md#A > Gone#0")
    assert not result2.keep("b.md#B#0")


def test_a_file_a_sparse_checkout_leaves_out_keeps_its_sections(repo: Path) -> None:
    # git still tracks it; only the work tree lacks it (git sparse-checkout): not a deletion.
    commit(repo, "docs", {"README.md": "# Readme\n\nhello\n", "docs/guide.md": "# Guide\n\ntuning\n"})
    result, nodes = scan(repo)
    assert "docs/guide.md#Guide#0" in {n.natural_key for n in nodes}
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/docs/")
    assert not (repo / "docs" / "guide.md").exists()
    result2, nodes2 = scan(repo, cursor=result.cursor)
    list(nodes2)
    assert result2.keep is not None and result2.keep("docs/guide.md#Guide#0")
    # a file deleted for real still goes
    git(repo, "sparse-checkout", "disable")
    git(repo, "rm", "-q", "docs/guide.md")
    result3, _nodes3 = scan(repo, cursor=result2.cursor)
    assert result3.keep is not None and not result3.keep("docs/guide.md#Guide#0")


def test_noop_rescan_does_no_work_and_keeps_cursor(repo: Path) -> None:
    commit(repo, "docs", {"README.md": "# R\n\nhello\n"})
    result, nodes = scan(repo)
    assert len(nodes) == 1 and result.cursor
    start = time.perf_counter()
    again, nodes2 = scan(repo, cursor=result.cursor)
    elapsed = time.perf_counter() - start
    assert nodes2 == [] and again.keep is None and again.cursor == result.cursor
    assert elapsed < 0.5  # two small git processes; generous for loaded CI machines
    forced, nodes3 = scan(repo, cursor=result.cursor, full=True)
    assert len(nodes3) == 1 and forced.keep is not None
    # touching a file (new mtime) changes the fingerprint even with identical content
    os.utime(repo / "README.md", ns=(1, 1))
    changed, nodes4 = scan(repo, cursor=result.cursor)
    assert changed.cursor != result.cursor and len(nodes4) == 1


def test_non_utf8_content_and_empty_repo(repo: Path) -> None:
    # No commit at all: untracked docs still count.
    (repo / "latin.md").write_bytes(b"# Caf\xe9\n\nna\xefve text \xff\n")
    _, nodes = scan(repo)
    assert len(nodes) == 1
    assert nodes[0].ref == "latin.md#Café"  # a byte that is not UTF-8 read as Latin-1 / Windows-1252
    assert "naïve text ÿ" in nodes[0].body


def test_include_exclude_size_and_ignored(repo: Path) -> None:
    commit(
        repo,
        "files",
        {
            ".gitignore": "ignored.md\n",
            "CHANGELOG.md": "# Changes\n\nx\n",
            "node_modules/pkg/README.md": "# Pkg\n\nx\n",
            "notes.txt": "# Not markdown\n\nx\n",
            "docs/page.mdx": "# Page\n\nx\n",
            "big.md": "# Big\n\n" + "x" * 2000 + "\n",
        },
    )
    (repo / "ignored.md").write_text("# Ignored\n\nx\n", encoding="utf-8")
    config = defaults()
    config["sources"]["docs"]["maxFileBytes"] = 1000
    result = DocsSource().scan(ScanContext(root=repo, project_id="p", config=config))
    assert [n.meta["path"] for n in result.nodes] == ["docs/page.mdx"]
    assert result.skipped == 1  # big.md


def test_an_agents_chat_transcript_in_the_work_tree_is_not_documentation(repo: Path) -> None:
    """Aider's `.aider.chat.history.md` (not ignored unless the user said yes to Aider's prompt) was read as
    docs with the conversation source off, the tool output it quotes (`> Running cat .env`) included."""
    chat = "# aider chat started at 2026-12-04 10:00:00\n\n#### why does login fail\n\n> Running cat .env\n> DB_HOST=prod-db.internal\n"
    commit(repo, "docs", {"README.md": "# App\n\nx\n", "sub/.aider.chat.history.md": chat})
    (repo / ".aider.chat.history.md").write_text(chat, encoding="utf-8")
    (repo / ".specstory" / "history").mkdir(parents=True)
    (repo / ".specstory" / "history" / "2026-12-04_chat.md").write_text(
        "# Chat\n\n> cat .env\n", encoding="utf-8"
    )
    (repo / "docs").mkdir()
    (repo / "docs" / "aider.chat.history.md").write_text("# About the history file\n\nx\n", encoding="utf-8")
    assert sorted({n.meta["path"] for n in scan(repo)[1]}) == ["README.md", "docs/aider.chat.history.md"]


def test_long_section_truncated_and_redacted(repo: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"
    commit(repo, "doc", {"a.md": f"# A\n\nexport GITHUB_TOKEN={token}\n\n" + "word " * 400 + "\n"})
    _, nodes = scan(repo, maxBodyChars=500)
    (node,) = nodes
    assert node.body.endswith(TRUNCATION_MARKER)
    assert len(node.body) == 500 + len(TRUNCATION_MARKER)
    assert token not in node.body


def test_commit_times_walk_many_files_in_one_git_log(repo: Path) -> None:
    files = {f"d/{i}.md": f"# T{i}\n\ntext {i}\n" for i in range(30)}
    commit(repo, "many", files, when=1_500_000_000)
    commit(repo, "one", {"d/7.md": "# T7\n\nchanged\n"}, when=1_600_000_000)
    _, nodes = scan(repo)
    ts = {n.meta["path"]: n.ts for n in nodes}
    assert ts["d/7.md"] == 1_600_000_000_000
    assert {v for k, v in ts.items() if k != "d/7.md"} == {1_500_000_000_000}


def test_unreadable_file_keeps_its_sections(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit(repo, "docs", {"a.md": "# A\n\na\n", "b.md": "# B\n\nb\n"})
    first, _ = scan(repo)
    unreadable(monkeypatch, "b.md")
    assert first.cursor is not None
    result, nodes = scan(repo, cursor=first.cursor + "x")
    assert [n.natural_key for n in nodes] == ["a.md#A#0"]
    assert result.skipped == 1 and result.cursor is None  # the next sync tries b.md again
    assert result.keep is not None and result.keep("b.md#B#0") and not result.keep("c.md#C#0")


# A Sphinx page as Python projects write them: a label, an overlined title, roles and directives, a literal
# block whose content looks like a title, a deeper level, a transition, and a title shorter than its line.
OPTIONS_RST = """.. _options:

=======
Options
=======

.. currentmodule:: click

Adding options to commands is done with the :func:`option` decorator.

Name Your Options
-----------------

The name is derived from the flags::

    Not a title
    -----------

    @click.option('--name')

.. note::

    Indented directive content
    ~~~~~~~~~~~~~~~~~~~~~~~~~~

Multiple Values
---------------

Options can take a fixed number of values with ``nargs``.

Tuples
~~~~~~

Deep text about tuples.

----

After a transition, still about tuples.

Boolean Flags
---
Flags turn a feature on or off.
"""


def test_rst_sections_follow_docutils_titles() -> None:
    sections = split_rst_sections(OPTIONS_RST, "options.rst")
    shape = [(s.heading, s.level, s.trail) for s in sections]
    assert shape == [
        ("Options", 1, ("Options",)),  # the label above it opens it: no preamble of a label alone
        ("Name Your Options", 2, ("Options", "Name Your Options")),
        ("Multiple Values", 2, ("Options", "Multiple Values")),
        ("Tuples", 3, ("Options", "Multiple Values", "Tuples")),
        ("Boolean Flags", 2, ("Options", "Boolean Flags")),
    ]
    by = {s.heading: s for s in sections}
    assert "Not a title" in by["Name Your Options"].text  # a literal block is not cut
    assert "Indented directive content" in by["Name Your Options"].text
    assert "After a transition, still about tuples." in by["Tuples"].text
    assert by["Options"].line == 4 and by["Name Your Options"].line == 11  # the title's own line
    assert by["Options"].text.startswith(".. _options:\n\n=======\nOptions\n")


def test_rst_docs_are_indexed_like_markdown(tmp_path: Path) -> None:
    refs = indexed(tmp_path, {"docs/options.rst": OPTIONS_RST, "README.md": "# Demo\n\nText.\n"})
    assert "docs/options.rst#Multiple Values" in refs and "README.md#Demo" in refs
    tuples = refs["docs/options.rst#Tuples"]
    assert tuples.title == "docs/options.rst — Tuples" and "Deep text about tuples." in tuples.body
    assert not any(ref.endswith("#Not a title") for ref in refs)


def test_heading_anchors_are_not_part_of_the_heading() -> None:
    """`## server.host {#server-host}` (VitePress, Docusaurus, Pandoc, MkDocs) is titled as a reader sees it."""
    text = "# Config {#config}\n\nIntro.\n\n## server.host {#server-host .api}\n\nThe host.\n\n## {#only}\n\nKept as written.\n"
    assert [s.heading for s in split_sections(text, "a.md")] == ["Config", "server.host", "{#only}"]
    assert [s.trail for s in split_sections(text, "a.md")][1] == ("Config", "server.host")
    # GitHub-style anchors: an empty <a id> / <a name> before the words is a link target, not a title.
    html = '## <a id="nulls"></a> Properties  missing\n\nText.\n\n## <A NAME=old /> Old `name`\n\nMore.\n'
    assert [s.heading for s in split_sections(html, "t.md")] == ["Properties missing", "Old `name`"]


@pytest.mark.parametrize(
    ("heading", "title"),
    [
        # testify's README: a link around a code span, with a link title.
        ('[`assert`](https://pkg.go.dev/x/assert "API documentation") package', "`assert` package"),
        (
            "[Snap](https://snapcraft.io/a) Ubuntu and [supported systems](https://snapcraft.io/b)",
            "Snap Ubuntu and supported systems",
        ),
        ("Install [![Build](https://ci/badge.svg)](https://ci/run)", "Install"),  # a badge is a picture
        ("Link [here](<a url with spaces>)", "Link here"),
        # By reference, a link only where the document defines the label; as written otherwise.
        ("copy(src, dest[, options][, callback])", "copy(src, dest[, options][, callback])"),
        ("See [RFC 3986](https://tools.ietf.org/html/rfc3986#section-3.4)", "See RFC 3986"),
        ("Usage (a [b](https://c/(d)))", "Usage (a b)"),
        # A code span is shown as written, whatever it holds; text in brackets that links nowhere stays.
        (
            "chalk.`<style>[.<style>...](string, [string...])`",
            "chalk.`<style>[.<style>...](string, [string...])`",
        ),
        ("Arrays [1, 2]", "Arrays [1, 2]"),
        ("![logo](logo.png)", "![logo](logo.png)"),  # nothing else: kept as written
        # A damaged line is kept as written, and costs no more than reading it.
        ("`" * 5000 + " [a](b)", "`" * 5000 + " [a](b)"),
        ("``a`b`` and `x` [y](z)", "``a`b`` and `x` y"),
    ],
)
def test_a_heading_is_titled_as_a_reader_sees_its_links(heading: str, title: str) -> None:
    text = f"# Top\n\nIntro.\n\n## {heading}\n\nBody.\n"
    assert split_sections(text, "README.md")[1].heading == title


def test_a_store_titled_with_link_markup_is_retitled_on_the_next_sync(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store synced when headings kept their link markup (docs-6) holds `README.md#[Snap](https://…)`:
    the next sync replaces it with the section as a reader sees it, and the old ref is gone."""
    from nexusmem import project
    from nexusmem.sources import docs

    from helpers import run_cli

    commit(
        repo,
        "docs",
        {
            "README.md": "# Tool\n\nIntro.\n\n## Install with [Snap](https://snapcraft.io/x)\n\nsnap install tool\n"
        },
    )
    with monkeypatch.context() as old:
        old.setattr(docs, "inline_text", lambda text: text)
        old.setattr(docs, "_CURSOR_VERSION", "docs-6")
        run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    with project.load(repo).open_store(readonly=True) as store:
        refs = {n.ref for n in store.iter_nodes("doc_section")}
    assert "README.md#Install with [Snap](https://snapcraft.io/x)" in refs
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    with project.load(repo).open_store(readonly=True) as store:
        sections = {n.ref: n for n in store.iter_nodes("doc_section")}
    assert "README.md#Install with Snap" in sections
    assert not any("](" in ref for ref in sections), sorted(sections)
    assert sections["README.md#Install with Snap"].title == "README.md — Install with Snap"


# A command-line tool's manual page in troff, as fzf, tmux or ripgrep ship them.
FINDER_1 = r""".\" the page header and this comment are not sections
.TH FINDER 1 "Nov 2026" "finder 0.56" "finder - a fuzzy finder"
.SH NAME
finder \- a command\-line fuzzy finder
.SH OPTIONS
.SS Layout
.TP
.BI "\-\-height=" "HEIGHT[%]"
Display finder window below the cursor with the given height instead of
using the full screen.
.PP
If a negative value is specified, the height is calculated as the terminal
height minus the given value.
.TP
.B "\-\-reverse"
A synonym for \fB\-\-layout=reverse\fR
.SH "ENVIRONMENT VARIABLES"
.IP \(bu 3n
FINDER_DEFAULT_OPTS: default options, e.g. \f(CW\-\-reverse\fP
.SH
EXIT STATUS
0 Normal exit
"""


def test_man_pages_are_cut_at_their_headings_as_plain_text() -> None:
    sections = split_man_sections(FINDER_1, "finder.1")
    assert [(s.heading, s.level, s.trail) for s in sections] == [
        ("NAME", 1, ("NAME",)),
        ("Layout", 2, ("OPTIONS", "Layout")),
        ("ENVIRONMENT VARIABLES", 1, ("ENVIRONMENT VARIABLES",)),
        ("EXIT STATUS", 1, ("EXIT STATUS",)),
    ]
    layout = sections[1].text
    assert "--height=HEIGHT[%]" in layout and "A synonym for --layout=reverse" in layout
    assert "using the full screen.\n\nIf a negative value" in layout  # .PP keeps paragraphs apart
    assert "\\f" not in layout and ".TP" not in layout and "3n" not in sections[2].text
    assert "*\nFINDER_DEFAULT_OPTS: default options, e.g. --reverse" in sections[2].text
    assert split_man_sections("just a file\nnamed like a page\n", "notes.1") == []  # no .SH: not a man page


def test_man_pages_are_indexed_and_other_numbered_files_are_not(tmp_path: Path) -> None:
    refs = indexed(tmp_path, {"man/man1/finder.1": FINDER_1, "data/run.1": "1 2 3\n4 5 6\n"})
    assert set(refs) == {
        f"man/man1/finder.1#{h}" for h in ("NAME", "Layout", "ENVIRONMENT VARIABLES", "EXIT STATUS")
    }


# An AsciiDoc guide as Asciidoctor-based projects (Spring, Antora sites, git's own docs) write them.
GUIDE_ADOC = """= Finder Guide
:toc: left

The document preamble.

== Installation

Use the package manager.

[source,console]
----
== not a title inside a listing block
$ finder --version
----

=== From source

Build it with `make`.

....
= literal, not a title
....

== Configuration

Set FINDER_OPTS in your shell profile.

====
An example block; its fence is not a title either.
====
"""


def test_asciidoc_sections_follow_its_titles_and_skip_blocks() -> None:
    sections = split_asciidoc_sections(GUIDE_ADOC, "guide.adoc")
    assert [(s.heading, s.level, s.trail) for s in sections] == [
        ("Finder Guide", 1, ("Finder Guide",)),
        ("Installation", 2, ("Finder Guide", "Installation")),
        ("From source", 3, ("Finder Guide", "Installation", "From source")),
        ("Configuration", 2, ("Finder Guide", "Configuration")),
    ]
    by = {s.heading: s for s in sections}
    assert "== not a title inside a listing block" in by["Installation"].text
    assert "= literal, not a title" in by["From source"].text
    assert "An example block" in by["Configuration"].text
    assert by["Installation"].line == 6


# The older two-line titles (AsciiDoc Python's, as ninja's manual is written): an underline as long as the title.
MANUAL_ASCIIDOC = """The Finder manual
=================
Jane Doe <jane@example.com>

Introduction
------------
What the finder is for.

Running it
~~~~~~~~~~
Run `finder` in a directory.
+
----
finder -t graph target
----

Subcommands
^^^^^^^^^^
Each tool is named with -t.

Not a title: the underline is too short
----
a listing, not a section
----
"""


def test_asciidoc_two_line_titles() -> None:
    sections = split_asciidoc_sections(MANUAL_ASCIIDOC, "doc/manual.asciidoc")
    assert [(s.heading, s.level, s.line) for s in sections] == [
        ("The Finder manual", 1, 1),
        ("Introduction", 2, 5),
        ("Running it", 3, 9),
        ("Subcommands", 4, 17),
    ]
    assert sections[-1].trail == ("The Finder manual", "Introduction", "Running it", "Subcommands")
    assert "finder -t graph target" in sections[2].text
    assert "a listing, not a section" in sections[3].text


def test_asciidoc_docs_are_indexed(tmp_path: Path) -> None:
    refs = indexed(tmp_path, {"docs/guide.adoc": GUIDE_ADOC, "NOTES.asciidoc": "== Why\n\nBecause.\n"})
    assert {"docs/guide.adoc#From source", "NOTES.asciidoc#Why"} <= set(refs)
    assert "Build it with `make`." in refs["docs/guide.adoc#From source"].body
    assert not any("not a title" in ref for ref in refs)


# A Ruby gem's README in RDoc, as rake and minitest write theirs: `=` headings, indented verbatim examples.
README_RDOC = """= FINDER -- find files by rule

home :: https://example.com/finder

== Installation

=== Gem Installation

  gem install finder

== Usage

Write a +Finderfile+:

  # Finderfile: a Ruby comment, not a heading
  rule "*.rb"
  == not a heading either, it is indented

=== The +finder+ *command*

Run it in a directory.
"""


def test_rdoc_sections_follow_its_headings_and_skip_verbatim() -> None:
    sections = sections_of(README_RDOC, "README.rdoc")
    assert [(s.heading, s.level, s.line) for s in sections] == [
        ("FINDER -- find files by rule", 1, 1),
        ("Gem Installation", 3, 7),
        ("Usage", 2, 11),
        ("The finder command", 3, 19),
    ]
    by = {s.heading: s for s in sections}
    assert by["Gem Installation"].trail == (
        "FINDER -- find files by rule",
        "Installation",
        "Gem Installation",
    )
    assert "# Finderfile: a Ruby comment, not a heading" in by["Usage"].text
    assert "== not a heading either" in by["Usage"].text
    # A file that says it is Markdown is read as Markdown.
    markdown = sections_of("# :markup: markdown\n\n# Title\n\nText.\n\n## Part\n\nMore.\n", "NOTES.rdoc")
    assert [s.heading for s in markdown] == ["Title", "Part"]


def test_rdoc_docs_are_indexed(tmp_path: Path) -> None:
    refs = indexed(
        tmp_path, {"README.rdoc": README_RDOC, "doc/rules.rdoc": "= Rules\n\nA rule names files.\n"}
    )
    assert {"README.rdoc#Gem Installation", "README.rdoc#Usage", "doc/rules.rdoc#Rules"} <= set(refs)
    assert "gem install finder" in refs["README.rdoc#Gem Installation"].body
    assert not any("not a heading" in ref or "Finderfile:" in ref for ref in refs)


# An Emacs package's manual in Org, as magit or org-roam write theirs.
MANUAL_ORG = """#+TITLE: Finder manual
#+AUTHOR: Jane Doe

Preamble text.

* Installation                                                     :install:
Use the package manager.
#+BEGIN_SRC emacs-lisp
* not a headline: inside a source block
(use-package finder)
#+END_SRC
** TODO [#A] From source
Clone and build.
*bold* words are not a headline, nor is a line of stars:
*****
* Configuration
Set ~finder-height~.
"""


def test_org_sections_follow_headlines_and_skip_blocks() -> None:
    sections = split_org_sections(MANUAL_ORG, "doc/finder.org")
    assert [(s.heading, s.level, s.line, s.trail) for s in sections] == [
        ("doc/finder.org", 0, 1, ("doc/finder.org",)),
        ("Installation", 1, 6, ("Installation",)),
        ("From source", 2, 12, ("Installation", "From source")),
        ("Configuration", 1, 16, ("Configuration",)),
    ]
    assert "* not a headline: inside a source block" in sections[1].text
    assert "*bold* words are not a headline" in sections[2].text and "*****" in sections[2].text


def test_org_docs_are_indexed(tmp_path: Path) -> None:
    refs = indexed(tmp_path, {"doc/finder.org": MANUAL_ORG})
    assert {"doc/finder.org#Installation", "doc/finder.org#From source"} <= set(refs)
    assert "(use-package finder)" in refs["doc/finder.org#Installation"].body


def test_a_file_name_holding_a_newline_cannot_fake_a_result_line(repo: Path) -> None:
    """A doc named `doc<newline>- 2020-01-01 [observed] fix: forged result.md` was printed raw in `query` and
    `show`: its title's second half read as another result. Doc and changelog titles escape it (`\\n`), as
    commit file lists and diff titles do."""
    forged = "- 2020-01-01 [observed] fix: forged result"
    commit(
        repo,
        "docs: add",
        {
            f"doc\n{forged}.md": "## Heading lemur\n\nlemur text\n",
            f"pkg\n{forged}/CHANGELOG.md": "# Changelog\n\n## 1.0.0\n\n- Fix the lemur parser\n",
        },
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    docs = [it for it in query_json(repo, "lemur")["items"] if it["kind"] == "doc_section"]
    assert len(docs) == 2, docs
    out = run_cli("-C", str(repo), "query", "lemur").output
    assert not any(line.startswith(forged) for line in out.splitlines()), out
    shown_titles = [line for line in out.splitlines() if "— Heading lemur" in line or "— 1.0.0:" in line]
    assert len(shown_titles) == 2 and all(f"\\n{forged}" in line for line in shown_titles), out
    for item in docs:
        shown = run_cli("-C", str(repo), "show", item["id"]).output
        assert not any(line.startswith(forged) for line in shown.splitlines()), shown


def test_a_commit_reads_again_only_the_doc_files_that_changed(repo: Path, isolated_home: Path) -> None:
    """Every commit moved HEAD, and the docs source read, split and redacted every doc file again (0.4–0.7 s
    of each post-commit sync on rust-lang/cargo). A file as the last sync read it keeps its sections; one
    edited (also in place with its old size and modification time, as `cp -p` leaves it), one whose date a
    commit moved, and one deleted are read, re-dated or pruned."""
    from nexusmem import project, sync

    commit(
        repo,
        "docs",
        {
            "guide.md": "# Guide\n\nInstall with pip.\n",
            "ops.md": "# Ops\n\nRestart the worker.\n",
            "x.md": "# X\n\nx\n",
        },
        when=1_600_000_000,
    )
    project.init(repo)

    def docs_synced() -> tuple[int, dict[str, tuple[str, int]]]:
        part = next(s for s in sync.sync(repo, embed=False).sources if s.name == "docs")
        with project.load(repo).open_store() as store:
            rows = store.conn.execute("SELECT ref, body, ts FROM nodes WHERE kind = 'doc_section'").fetchall()
        return part.added + part.updated + part.removed, {ref: (body, ts) for ref, body, ts in rows}

    _, first = docs_synced()
    commit(repo, "code", {"app.py": "x = 1\n"}, when=1_700_000_000)
    assert docs_synced() == (0, first)
    stat = (repo / "ops.md").stat()
    (repo / "ops.md").write_text("# Ops\n\nRestart the broker.\n", encoding="utf-8")  # the same size
    os.utime(repo / "ops.md", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    changed, held = docs_synced()
    assert changed == 1 and held["ops.md#Ops"][0].endswith("Restart the broker.")
    assert held["guide.md#Guide"] == first["guide.md#Guide"]
    git(repo, "rm", "-q", "x.md")
    commit(repo, "guide again", {"guide.md": "# Guide\n\nInstall with pipx.\n"}, when=1_750_000_000)
    changed, held = docs_synced()
    assert set(held) == {"guide.md#Guide", "ops.md#Ops"}
    assert held["guide.md#Guide"] == ("# Guide\n\nInstall with pipx.", 1_750_000_000_000)


UPGRADING = """# Upgrade guide

What to change when moving between versions.

## 3.5 to 3.6

### Deprecations

The `setBaseUrl` method is deprecated in favour of the client's options.

### Interface changes

`RequestInterface::getBody` returns a stream.

## 3.6 to 3.7

### Deprecations

The `setSslVerification` method is deprecated: pass the `verify` option.

### Interface changes

`ClientInterface::send` takes an array of requests.
"""


def test_a_heading_the_file_repeats_is_titled_with_its_parent(repo: Path) -> None:
    """UPGRADING.md (guzzle's) has a "Deprecations" and an "Interface changes" under each version: a query
    listed "UPGRADING.md — Deprecations" twice, with nothing to say which upgrade each was. A heading the
    file repeats carries its parent in the title, as a generic heading does; its ref stays path#Heading
    (what `show` and the labelled doc targets name), and a heading used once is titled as before."""
    commit(repo, "docs: upgrade guide", {"UPGRADING.md": UPGRADING})
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    items = query_json(repo, "deprecated method")["items"]
    titles = sorted(
        it["title"] for it in items if it["kind"] == "doc_section" and "Deprecations" in it["title"]
    )
    assert titles == ["UPGRADING.md — 3.5 to 3.6 › Deprecations", "UPGRADING.md — 3.6 to 3.7 › Deprecations"]
    _, nodes = scan(repo)
    by_title = {n.title: n.ref for n in nodes}
    assert by_title["UPGRADING.md — 3.6 to 3.7 › Interface changes"] == "UPGRADING.md#Interface changes"
    assert by_title["UPGRADING.md — 3.5 to 3.6 › Deprecations"] == "UPGRADING.md#Deprecations"
    assert "UPGRADING.md — Upgrade guide" in by_title  # used once: no parent
    assert len(by_title) == len(nodes)


# A PNG's first bytes: its signature, then the IHDR chunk's length (NULs) and more bytes that are not text.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" + bytes(range(256)) * 8


def test_a_binary_doc_is_skipped_and_named_and_a_latin1_doc_is_found_by_its_words(repo: Path) -> None:
    """A .md that is an image was stored as one section of mojibake and nothing said so; a Latin-1 doc was
    stored as "Caf\ufffd configuration", so "café" did not find it. Git's test tells the binary file (a NUL
    among its first 8,000 bytes): it is skipped and named like a doc too big to read, at every sync that reads
    the docs; a byte that is not UTF-8 is read as Latin-1 (Windows-1252), and a stray NUL in UTF-8 text
    leaves the file a doc."""
    commit(
        repo,
        "docs",
        {
            "docs/logo.md": PNG,
            "docs/latin1.md": b"# Caf\xe9 configuration\n\nThe caf\xe9 opens at eight; its na\xefve barista.\n",
            "docs/pasted.md": b"# Pasted\n\nbefore\x00after, the okapi section\n",
        },
    )

    def docs_synced() -> dict[str, Any]:
        out = json.loads(run_cli("-C", str(repo), "sync", "--json", "--no-embed").stdout)
        found: dict[str, Any] = {s["name"]: s for s in out["sources"]}["docs"]
        return found

    first = docs_synced()
    assert first["problems"] == ["docs/logo.md: binary, not text"] and first["skipped"] == 1, first
    titles = [it["title"] for it in query_json(repo, "café")["items"]]
    assert "docs/latin1.md — Café configuration" in titles, titles
    assert [it["title"] for it in query_json(repo, "okapi")["items"]][:1] == ["docs/pasted.md — Pasted"]
    _, nodes = scan(repo)
    assert not any(n.meta["path"] == "docs/logo.md" for n in nodes), [n.title for n in nodes]
    commit(repo, "docs: more", {"docs/more.md": "# More\n\ntext\n"})
    assert docs_synced()["problems"] == ["docs/logo.md: binary, not text"]  # named again, not forgotten


CONFIG_RST = """.. Licensed under the Apache License: http://www.apache.org/licenses/LICENSE-2.0
.. For details: https://example.com/NOTICE.txt

.. [[[cog
    from cog_helpers import show_configs
.. ]]]
.. [[[end]]] (sum: 1B2M2Y8Asg)

.. _config:

=======================
Configuration reference
=======================

.. highlight:: ini

Options go in a configuration file, see the `tool site`_.

.. _tool site: https://example.com/tool

.. _config_run:

[run]
-----

.. _config_run_branch:

[run] branch
............

(boolean, default False) Whether to measure the okapi branches too.


.. _config_run_command_line:
.. _config_run_cmdline:

[run] command_line
..................

The command line to run.
"""


def test_an_rst_label_above_a_title_belongs_to_the_section_it_names() -> None:
    """coverage.py's `.. _config_run_branch:` above `[run] branch` was stored at the end of the section before
    it: `show` of that section ended with the next one's label, a `:ref:` name found the section before the
    one it names, and a title-only section holding only the next one's label ranked for it. An internal
    target (no URL) directly above a title, with blank lines between, opens that title's section; a target
    with a URL stays where it is."""
    sections = {s.heading: s for s in split_rst_sections(CONFIG_RST, "config.rst")}
    branch = sections["[run] branch"]
    assert branch.text.startswith(".. _config_run_branch:\n\n[run] branch\n")
    assert "_config_run_command_line" not in branch.text and branch.line == 28
    command = sections["[run] command_line"]
    assert command.text.startswith(
        ".. _config_run_command_line:\n.. _config_run_cmdline:\n\n[run] command_line"
    )
    top = sections["Configuration reference"]
    assert top.text.startswith(".. _config:\n\n=====") and top.line == 12
    assert ".. _tool site: https://example.com/tool" in top.text and "_config_run:" not in top.text
    assert "[run]" not in sections  # its only line was the next section's label: a bare title
    assert [s.trail for s in sections.values() if s.level] == [
        ("Configuration reference",),
        ("Configuration reference", "[run]", "[run] branch"),
        ("Configuration reference", "[run]", "[run] command_line"),
    ]


def test_an_rst_label_finds_the_section_it_names(repo: Path) -> None:
    commit(repo, "docs: config", {"doc/config.rst": CONFIG_RST})
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    docs = [it for it in query_json(repo, "config_run_command_line")["items"] if it["kind"] == "doc_section"]
    assert docs[0]["ref"] == "doc/config.rst#[run] command_line"
    docs = [it for it in query_json(repo, "config_run_branch")["items"] if it["kind"] == "doc_section"]
    assert docs[0]["ref"] == "doc/config.rst#[run] branch"


CMD_RST = """.. Licensed under the Apache License: http://www.apache.org/licenses/LICENSE-2.0
.. For details: https://example.com/NOTICE.txt

.. This file is processed with cog to insert the latest command help into the
    docs. If it's out of date, the quality checks will fail.

.. [[[cog
    from cog_helpers import show_help
.. ]]]
.. [[[end]]] (sum: 1B2M2Y8Asg)

.. highlight:: console

.. _cmd_merge:

Merging data files: ``tool merge``
----------------------------------

Often test suites are run under different conditions, and the okapi files are merged.
"""


def test_an_rst_preamble_of_comments_labels_and_bare_directives_is_no_section(tmp_path: Path) -> None:
    """Every coverage.py page opened with a "preamble" section (`doc/migrating.rst — migrating.rst`) holding
    only the license comment, cog's markers and a label, and it ranked first for the page's label. Before the
    first title, comments, targets and directives with no content are no section; prose there still is."""
    assert [s.heading for s in split_rst_sections(CMD_RST, "cmd_merge.rst")] == [
        "Merging data files: ``tool merge``"
    ]
    assert [s.level for s in split_rst_sections(CONFIG_RST, "config.rst")] == [1, 3, 3]
    told = split_rst_sections(".. a comment\n\nWords before any title.\n\nTitle\n=====\n\nText.\n", "t.rst")
    assert [(s.heading, s.level) for s in told] == [("t.rst", 0), ("Title", 1)]
    orphan = split_rst_sections(".. license\n\n:orphan:\n\n.. _x:\n\nTitle\n=====\n\nText.\n", "o.rst")
    assert [s.heading for s in orphan] == ["Title"]  # metadata fields are no prose either
    noted = split_rst_sections(".. note::\n\n   Read this first.\n\nTitle\n=====\n\nText.\n", "n.rst")
    assert [s.heading for s in noted] == ["n.rst", "Title"]  # a directive with content is read
    refs = indexed(tmp_path, {"doc/cmd_merge.rst": CMD_RST})
    assert list(refs) == ["doc/cmd_merge.rst#Merging data files: ``tool merge``"]


INSTALL_RST = """.. _install:

============
Installation
============

.. highlight:: console

Installing the okapi tool is done with pip::

    $ python3 -m pip install okapi
    # a comment in the literal block

#. Install the okapi tool with pip.

#. Check the okapi version.

""" + "".join(
    f"Paragraph {n} about the okapi install steps, long enough to fill a line of text.\n\n" for n in range(12)
)

GUIDE_MD = """Okapi guide
===========

Setext titles are underlined, and the okapi reads them.

```sh
# a shell comment
okapi run
```

## Deeper okapi

More.
"""


def test_the_text_shown_under_a_doc_section_skips_its_title_markup(repo: Path) -> None:
    """Under an RST section an answer showed `====` / its title / `====` / `.. highlight:: python` and
    nothing it said, and it dropped every line starting with `#` (auto-numbered items, `#. Install…`, and
    comments in literal blocks) as if it were a Markdown heading. Title adornments, the title and bare
    directives or labels are skipped; `#.` items and code comments are kept; Markdown's setext title too."""
    commit(repo, "docs", {"doc/install.rst": INSTALL_RST, "guide.md": GUIDE_MD})
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")

    def shown(query: str, ref: str, *extra: str) -> str:
        items = query_json(repo, query, *extra)["items"]
        return str(next(it["summary"] for it in items if it["ref"] == ref))

    text = shown("install the okapi tool", "doc/install.rst#Installation")
    assert text.split("\n")[:4] == [
        "Installing the okapi tool is done with pip::",
        "    $ python3 -m pip install okapi",
        "    # a comment in the literal block",
        "#. Install the okapi tool with pip.",
    ]
    guide = shown("setext okapi", "guide.md#Okapi guide").split("\n")
    assert guide[:3] == [
        "Setext titles are underlined, and the okapi reads them.",
        "```sh",
        "# a shell comment",
    ]
    # An answer with room shows more of a section; the default budget, as much as before.
    assert len(text) <= 320
    more = shown("install the okapi tool", "doc/install.rst#Installation", "--budget", "8000")
    assert more.startswith(text.rstrip("…")) and len(more) > 2 * len(text) and "Paragraph 3 about" in more


@pytest.mark.parametrize(
    ("heading", "title"),
    [
        ("HTML reporting: ``coverage html``", "HTML reporting: `coverage html`"),
        ("The :class:`Coverage` class", "The Coverage class"),
        ("See :ref:`the API <api>` and :func:`~pkg.mod.run`", "See the API and run"),
        ("Install from `PyPI <https://pypi.org/>`_ or `source`_", "Install from PyPI or source"),
        ("*Really* **fast** ``x`` `y`", "Really fast `x` y"),
        ("Version 7.3.4 — 2023-12-20", "Version 7.3.4 — 2023-12-20"),
    ],
)
def test_an_rst_title_is_shown_as_a_reader_sees_it_and_its_ref_kept(
    tmp_path: Path, heading: str, title: str
) -> None:
    """coverage.py's "HTML reporting: ``coverage html``" was titled with its literal markup. An RST title is
    shown as a reader sees it (roles and links as their text, a literal as a code span, as a Markdown title
    shows one); its ref stays path#Heading as written, the name `show`, labels and the eval's targets use."""
    text = f".. _cmd:\n\n{heading}\n{'=' * len(heading)}\n\nThe okapi text.\n"
    (node,) = indexed(tmp_path, {"doc/cmd.rst": text}).values()
    assert node.title == f"doc/cmd.rst — {title}" and node.ref == f"doc/cmd.rst#{heading}"


def test_a_markdown_title_shows_its_escapes_as_a_reader_sees_them(repo: Path) -> None:
    """connection_pool's README titles itself "connection\\_pool" (setext): its section read
    "README.md — connection\\_pool › Usage", where a reader sees "connection_pool". Titles (setext and ATX)
    show Markdown's backslash escapes unescaped, a code span as written; refs keep the heading as written
    (what the labelled targets name)."""
    readme = (
        "connection\\_pool\n================\n\nA pool.\n\nUsage\n-----\n\nCreate one.\n\n"
        "## The \\*star\\* option \\# and `a\\_b`\n\nStars.\n\n## C:\\\\temp and \\q\n\nPaths.\n"
    )
    commit(repo, "docs", {"README.md": readme})
    _, nodes = scan(repo)
    by_ref = {n.ref: n.title for n in nodes}
    assert by_ref["README.md#connection\\_pool"] == "README.md — connection_pool", by_ref
    assert by_ref["README.md#Usage"] == "README.md — connection_pool › Usage", by_ref
    star = "README.md#The \\*star\\* option \\# and `a\\_b`"
    assert by_ref[star] == "README.md — The *star* option # and `a\\_b`", by_ref
    assert by_ref["README.md#C:\\\\temp and \\q"] == "README.md — C:\\temp and \\q", by_ref


API_RST = """.. _api:

API reference
=============

The API to okapi is in a module called :mod:`okapi`.  Most of the interface is in
the :class:`okapi.Okapi` class.  The :class:`okapi.OkapiData` class reads and
writes the data files that a run collects, and merges the files of several runs.
"""

API_DATA_RST = """.. Licensed under the Apache License: http://www.apache.org/licenses/LICENSE-2.0

.. _api_data:

The OkapiData class
-------------------

.. autoclass:: okapi.OkapiData
    :members:
    :special-members: __init__

Storage details
...............

.. autoclass:: okapi.data.Storage
    :members:
"""


def test_an_rst_section_of_autodoc_directives_alone_does_not_outrank_a_section_with_text(repo: Path) -> None:
    """coverage.py's doc/api_coveragedata.rst: "The CoverageData class" holds only `.. autoclass::` and its
    options (Sphinx fills it from the docstrings, which memory does not read), and it came first for "what
    does the CoverageData class do?", shown as its title alone. A section with nothing a reader sees under its
    title counts less: the section that says what the class does comes first; the bare one is still found."""
    commit(repo, "docs: API pages", {"doc/api.rst": API_RST, "doc/api_data.rst": API_DATA_RST})
    for n, area in enumerate(["parser", "tracer", "html report", "xml report", "debug output"] * 4):
        commit(repo, f"Tidy the {area} code ({n})", {f"{area.split()[0]}.py": f"N = {n}\n"})
    run_cli("-C", str(repo), "sync", "-q")
    items = query_json(repo, "what does the OkapiData class do?")["items"]
    docs = [it for it in items if it["kind"] == "doc_section"]
    assert docs[0]["ref"] == "doc/api.rst#API reference", [(d["ref"], d["summary"]) for d in docs]
    assert docs[0]["summary"], docs[0]
    assert "doc/api_data.rst#The OkapiData class" in [d["ref"] for d in docs]
