"""The git collectors on real repositories: commits, per-file patches, cursors and rewritten history."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import nexusmem
from nexusmem import gitcmd, project, sync
from nexusmem.config import defaults
from nexusmem.nodes import Node
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.git.commits import truncate
from nexusmem.sources.git.diff import unquote_path
from nexusmem.sources.git.source import DiffSource, GitSource

from helpers import commit, git, query_json, run_cli


def config(**diff: Any) -> dict[str, Any]:
    cfg = defaults()
    cfg["sources"]["diff"].update(diff)
    return cfg


def scan(
    source: GitSource | DiffSource,
    root: Path,
    cursor: str | None = None,
    *,
    cfg: dict[str, Any] | None = None,
    full: bool = False,
) -> tuple[list[Node], ScanResult]:
    ctx = ScanContext(root=root, project_id="proj", config=cfg or defaults(), cursor=cursor, full=full)
    result = source.scan(ctx)
    nodes = list(result.nodes)
    return nodes, result


def by_key(nodes: list[Node]) -> dict[str, Node]:
    return {n.natural_key: n for n in nodes}


# ---------------------------------------------------------------------------------------------- commits


def test_commit_nodes_types_signals_and_files(repo: Path) -> None:
    a = commit(repo, "feat(cli): add query", {"a.py": "x = 1\n"}, when=1_700_000_000)
    b = commit(repo, "chore: tidy", {"a.py": "x = 2\n", "b.md": "# hi\n"}, when=1_700_000_100)
    long_body = "fix: handle empty input\n\n" + "The parser crashed on empty input because it assumed... " * 4
    c = commit(repo, long_body, {"a.py": "x = 3\n"})
    d = commit(repo, "refactor!: drop old API", {})

    nodes, result = scan(GitSource(), repo)
    got = by_key(nodes)
    assert set(got) == {a, b, c, d}
    na = got[a]
    assert na.kind == "git_commit" and na.source == "git"
    assert na.ref == a and na.group == a and na.title == "feat(cli): add query"
    assert na.ts == 1_700_000_000_000
    assert na.signal == pytest.approx(0.8)
    assert na.files == ("a.py",)
    assert na.meta["type"] == "feat" and na.meta["merge"] is False and na.meta["parents"] == []
    assert na.meta["author"] == "Test User" and "email" not in na.meta
    assert "Files: a.py (+1 -0)" in na.body
    nb = got[b]
    assert nb.signal == pytest.approx(0.25)
    assert set(nb.files) == {"a.py", "b.md"} and nb.meta["parents"] == [a]
    assert nb.meta["insertions"] == 2 and nb.meta["deletions"] == 1
    assert got[c].signal == pytest.approx(0.9)  # fix .8 + long body .1
    assert "assumed" in got[c].body
    assert got[d].signal == pytest.approx(0.8)  # other .68 refactor + .12 breaking
    assert got[d].files == ()
    assert result.cursor and result.cursor.endswith(d)
    assert result.keep is not None and result.keep(a) and not result.keep("0" * 40)


def test_rename_resolves_to_new_path_and_odd_names(repo: Path) -> None:
    commit(repo, "init", {"old.txt": "one\ntwo\nthree\nfour\n", "tab\there.txt": "t\n"})
    git(repo, "mv", "old.txt", "new name.txt")
    sha = commit(repo, "move", {"new name.txt": "one\ntwo\nthree\nfour\nfive\n"})
    nodes, _ = scan(GitSource(), repo)
    assert by_key(nodes)[sha].files == ("new name.txt",)
    diffs, _ = scan(DiffSource(), repo)
    node = by_key(diffs)[f"{sha}:new name.txt"]
    assert node.meta["old_path"] == "old.txt" and node.meta["insertions"] == 1
    assert any(n.meta["path"] == "tab\there.txt" for n in diffs)


def test_unquote_and_truncate_helpers() -> None:
    assert unquote_path(b'"a\\tb\\303\\251\\"c"') == b'a\tb\xc3\xa9"c'
    assert unquote_path(b"plain") == b"plain"
    text, cut = truncate("line\n" * 100, 50)
    assert cut and text.endswith("more characters]") and len(text) < 100
    assert truncate("short", 50) == ("short", False)


# ------------------------------------------------------------------------------------------------ diffs


def test_diff_nodes_one_per_file_skipping_binary_lockfile_and_merge(repo: Path) -> None:
    base = commit(repo, "init", {"src/app.py": "print(1)\n"})
    sha = commit(
        repo,
        "fix(app): print two",
        {
            "src/app.py": "print(2)\n",
            "README.md": "# readme\n",
            "logo.png": b"\x89PNG\x00\x01\x02",
            "package-lock.json": "{}\n",
            "web/dist/bundle.js": "var a;\n",
            "deps/Cargo.lock": "x\n",
        },
    )
    git(repo, "checkout", "-q", "-b", "topic", base)
    topic = commit(repo, "feat: topic", {"topic.py": "t = 1\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch 'topic'", "topic")
    merge = git(repo, "rev-parse", "HEAD").strip()

    nodes, result = scan(DiffSource(), repo)
    keys = set(by_key(nodes))
    assert keys == {f"{base}:src/app.py", f"{sha}:src/app.py", f"{sha}:README.md", f"{topic}:topic.py"}
    assert not any(n.meta["sha"] == merge for n in nodes)
    node = by_key(nodes)[f"{sha}:src/app.py"]
    assert node.kind == "code_diff" and node.ref == node.natural_key and node.group == sha
    assert node.title == f"src/app.py @ {sha[:7]} — fix(app): print two"
    assert node.body.startswith("@@ ") and "-print(1)" in node.body and "+print(2)" in node.body
    assert node.files == ("src/app.py",)
    assert node.meta["insertions"] == 1 and node.meta["deletions"] == 1 and node.meta["old_path"] is None
    assert node.signal == pytest.approx(0.8 * 0.9)
    # binary + 3 skip-glob files (lockfile, dist/ under a subdir, *.lock under a subdir) + the merge
    assert result.skipped == 5

    commits, _ = scan(GitSource(), repo)
    merge_node = by_key(commits)[merge]
    assert merge_node.meta["merge"] is True and merge_node.signal <= 0.3
    assert len(merge_node.meta["parents"]) == 2
    assert by_key(commits)[sha].files.count("logo.png") == 1  # binaries are still listed on the commit


def test_diff_truncation_and_max_files(repo: Path) -> None:
    big = "".join(f"line {i} of a long file\n" for i in range(2000))
    files: dict[str, str | bytes] = {"big.txt": big}
    files.update({f"f{i}.txt": f"{i}\n" for i in range(5)})
    sha = commit(repo, "feat: big", files)
    cfg = config(maxFilesPerCommit=3)
    cfg["limits"]["maxBodyChars"] = 1000
    nodes, result = scan(DiffSource(), repo, cfg=cfg)
    assert len(nodes) == 3 and result.skipped == 3
    node = by_key(nodes)[f"{sha}:big.txt"]
    assert node.meta["truncated"] is True and node.meta["insertions"] == 2000
    assert len(node.body) < 1100
    assert node.body.splitlines()[-1].startswith("[… truncated: ")
    more = int(node.body.splitlines()[-1].split()[2])
    assert more > len(big) - 1100


def test_diff_first_sync_window_then_incremental_then_noop(repo: Path) -> None:
    shas = [commit(repo, f"feat: step {i}", {"f.txt": f"{i}\n"}) for i in range(6)]
    cfg = config(initialCommits=3)
    nodes, first = scan(DiffSource(), repo, cfg=cfg)
    assert {n.meta["sha"] for n in nodes} == set(shas[-3:])

    new = [commit(repo, f"fix: more {i}", {"g.txt": f"{i}\n"}) for i in range(2)]
    nodes, second = scan(DiffSource(), repo, first.cursor, cfg=cfg)
    assert {n.meta["sha"] for n in nodes} == set(new)
    assert second.cursor != first.cursor

    nodes, third = scan(DiffSource(), repo, second.cursor, cfg=cfg)
    assert nodes == [] and third.keep is None and third.cursor == second.cursor

    # full=True ignores the cursor
    nodes, _ = scan(DiffSource(), repo, second.cursor, cfg=cfg, full=True)
    assert len(nodes) == 3


def test_commit_incremental_and_noop(repo: Path) -> None:
    first_shas = [commit(repo, f"feat: {i}", {"a.txt": f"{i}\n"}) for i in range(3)]
    nodes, first = scan(GitSource(), repo)
    assert {n.natural_key for n in nodes} == set(first_shas)
    nodes, again = scan(GitSource(), repo, first.cursor)
    assert nodes == [] and again.keep is None and again.cursor == first.cursor

    new = commit(repo, "fix: later", {"a.txt": "x\n"})
    nodes, second = scan(GitSource(), repo, first.cursor)
    assert [n.natural_key for n in nodes] == [new]
    assert second.keep is None  # HEAD moved forward and nothing else moved: nothing to prune, no rev-list

    # A new branch moves the fingerprint but not HEAD: nothing to walk, still a fresh cursor.
    git(repo, "branch", "side")
    nodes, third = scan(GitSource(), repo, second.cursor)
    assert nodes == [] and third.cursor != second.cursor


def test_a_commit_after_a_branch_was_deleted_prunes_the_commits_only_that_branch_held(repo: Path) -> None:
    """A commit (HEAD moved forward) skips the walk of the whole history that pruning needs, unless another
    ref moved too: a branch deleted since the last sync takes its own commits out of memory at that sync,
    and a commit made since does not hide it."""
    base = commit(repo, "feat: base", {"a.txt": "a\n"})
    git(repo, "checkout", "-q", "-b", "side")
    side = commit(repo, "feat: side work", {"s.txt": "s\n"})
    git(repo, "checkout", "-q", "main")
    _, first = scan(GitSource(), repo)
    git(repo, "branch", "-q", "-D", "side")
    new = commit(repo, "feat: main work", {"m.txt": "m\n"})
    nodes, second = scan(GitSource(), repo, first.cursor)
    assert [n.natural_key for n in nodes] == [new]
    assert second.keep is not None and not second.keep(side) and second.keep(base) and second.keep(new)


@pytest.mark.parametrize("rewrite", ["amend", "reset"])
def test_rewritten_history_walks_the_new_commits_and_prunes(repo: Path, rewrite: str) -> None:
    a = commit(repo, "feat: a", {"a.txt": "a\n"})
    b = commit(repo, "feat: b", {"b.txt": "b\n"})
    _, first = scan(GitSource(), repo)
    _, dfirst = scan(DiffSource(), repo)
    if rewrite == "amend":
        git(repo, "commit", "-q", "--amend", "-m", "feat: b, reworded")
    else:
        git(repo, "reset", "-q", "--hard", a)
    head = git(repo, "rev-parse", "HEAD").strip()

    # The commits walked are those the old HEAD does not reach (a commit's node is its own alone): the
    # amended one; none after the reset. What the history no longer reaches is pruned by keep().
    nodes, second = scan(GitSource(), repo, first.cursor)
    assert {n.natural_key for n in nodes} == ({head} if rewrite == "amend" else set())
    assert second.keep is not None
    assert not second.keep(b) and second.keep(a) and second.keep(head)

    # The same for the patches (a's were read already and stay).
    dnodes, dsecond = scan(DiffSource(), repo, dfirst.cursor)
    assert {n.meta["sha"] for n in dnodes} == ({head} if rewrite == "amend" else set())
    assert dsecond.keep is not None and not dsecond.keep(f"{b}:b.txt") and dsecond.keep(f"{a}:a.txt")


def test_filter_branch_backup_refs_do_not_keep_the_rewritten_commits(repo: Path) -> None:
    """`git filter-branch` keeps the old commits under refs/original/: they were still answered as history,
    every rewritten commit twice, and the file filter-branch removed (a leaked value) with them. History is
    what branches, tags, remote-tracking branches and HEAD reach."""
    commit(repo, "feat: app", {"app.py": "print(1)\n"})
    commit(repo, "chore: add deploy config", {"deploy.cfg": "launch_code=ZEBRAFISH-7731-OMEGA\n"})
    commit(repo, "feat: more", {"app.py": "print(2)\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    git(
        repo,
        "filter-branch",
        "-f",
        "--index-filter",
        "git rm -q --cached --ignore-unmatch deploy.cfg",
        "--",
        "--all",
        env={"FILTER_BRANCH_SQUELCH_WARNING": "1"},
    )
    assert git(repo, "for-each-ref", "refs/original/").strip()  # the backup git keeps
    run_cli("-C", str(repo), "sync", "--no-embed")
    items = query_json(repo, "ZEBRAFISH-7731-OMEGA")["items"]
    assert not any("deploy.cfg" in it["title"] or "ZEBRAFISH" in json.dumps(it) for it in items), items
    titles = [it["title"] for it in query_json(repo, "feat app more")["items"] if "@" not in it["title"]]
    assert sorted(titles) == sorted({*titles}), titles  # each commit once, not once per copy


def test_a_stash_does_not_keep_a_commit_a_reset_dropped(repo: Path) -> None:
    """A stash made on a commit and a `git reset --hard HEAD~1` after: the stash's parent is the dropped
    commit, and it was still answered (with no note) as if a branch had it."""
    commit(repo, "feat: app", {"app.py": "print(1)\n"})
    commit(repo, "feat: bad idea kiwi", {"app.py": "print(3)\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    (repo / "app.py").write_text("wip\n", encoding="utf-8")
    git(repo, "stash", "-q")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit(repo, "feat: new start", {"n.py": "new\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert not any("kiwi" in it["title"] for it in query_json(repo, "bad idea kiwi")["items"])


def test_a_pull_rebase_bigger_than_the_first_sync_window_gets_every_patch(repo: Path) -> None:
    """A `pull --rebase` moves HEAD without a fast-forward; the diff source read only the first-sync
    window (200; 3 here) of it, so the older of the pulled commits silently had no patch, where a plain
    pull of the same commits indexed them all. Every commit the old HEAD does not reach is read now."""
    cfg = defaults()
    cfg["sources"]["diff"]["initialCommits"] = 3
    commit(repo, "feat: base", {"base.txt": "0\n"})
    git(repo, "checkout", "-q", "-b", "local")
    commit(repo, "feat: my local work", {"mine.txt": "1\n"})
    _, first = scan(DiffSource(), repo, cfg=cfg)
    git(repo, "checkout", "-q", "main")
    pulled = [commit(repo, f"feat: upstream {i}", {f"up{i}.txt": f"{i}\n"}) for i in range(6)]
    git(repo, "checkout", "-q", "local")
    git(repo, "rebase", "-q", "main")
    mine = git(repo, "rev-parse", "HEAD").strip()
    dnodes, _ = scan(DiffSource(), repo, first.cursor, cfg=cfg)
    assert {n.meta["sha"] for n in dnodes} == {*pulled, mine}


def init_with_a_diff_window(repo: Path, commits: int) -> None:
    """`init` REPO with the first sync's patches kept to the newest COMMITS (sources.diff.initialCommits)."""
    proj, _ = project.init(repo)
    cfg_path = proj.db_path.parent / "config.json"
    written = json.loads(cfg_path.read_text(encoding="utf-8"))
    written["sources"]["diff"]["initialCommits"] = commits
    cfg_path.write_text(json.dumps(written), encoding="utf-8")


def test_a_checkout_to_an_old_branch_and_back_reads_only_the_patches_of_new_commits(repo: Path) -> None:
    """The first sync reads the patches of the newest `initialCommits` commits only. A checkout of a branch
    forked long ago and back to main walked every commit of main since the fork (held in memory all along)
    and read all their patches: 1,844 on pallets/quart, seconds, the store nearly twice its size. Only the
    commits new to memory get theirs: the old branch's own, and one made on main since."""
    commit(repo, "feat: base", {"base.txt": "0\n"})
    git(repo, "checkout", "-q", "-b", "old")
    old = {commit(repo, f"fix: old {i}", {f"old{i}.txt": f"{i}\n"}) for i in range(2)}
    git(repo, "checkout", "-q", "main")
    for i in range(8):
        commit(repo, f"feat: main {i}", {f"main{i}.txt": f"{i}\n"})
    init_with_a_diff_window(repo, 3)

    def diff_added() -> int:
        return next(s.added for s in sync.sync(repo, embed=False).sources if s.name == "diff")

    assert diff_added() == 3  # the first sync's window
    git(repo, "checkout", "-q", "old")
    assert diff_added() == 2
    git(repo, "checkout", "-q", "main")
    assert diff_added() == 0  # was 5: main's commits since the fork the window had left out
    git(repo, "checkout", "-q", "old")
    assert diff_added() == 0
    git(repo, "checkout", "-q", "main")
    new = commit(repo, "feat: after the switch", {"new.txt": "n\n"})  # memory is still at old
    assert diff_added() == 1
    with project.load(repo).open_store() as store:
        keys = store.conn.execute("SELECT natural_key FROM nodes WHERE kind = 'code_diff'").fetchall()
    shas = {key.split(":", 1)[0] for (key,) in keys}
    assert old | {new} <= shas and len(shas) == 6, shas


def synced_then_amended(repo: Path, steps: int) -> str:
    """STEPS commits and a fix, synced; then the fix amended (a new sha for HEAD). Returns the replaced sha."""
    for i in range(steps):
        commit(repo, f"feat: step {i}", {f"f{i}.txt": f"{i}\n"})
    old = commit(repo, "fix: the retry loop", {"retry.txt": "1\n"})
    project.init(repo)
    sync.sync(repo, embed=False)
    git(repo, "commit", "-q", "--amend", "-m", "fix: the retry loop gives up after three tries")
    return old


def test_an_amend_reads_the_new_commit_only_and_drops_the_one_it_replaced(repo: Path) -> None:
    """`git commit --amend` (or a rebase, a reset) moves HEAD off its old commit: the git source walked the
    whole history again, every commit's change words (2.3 s on urllib3's 4,402 commits, after every amend's
    post-commit sync). The sync's progress shows the commits read: now the amended commit alone, the old
    one is gone from memory and the others are untouched."""
    old = synced_then_amended(repo, 12)
    amended = git(repo, "rev-parse", "HEAD").strip()
    read: list[tuple[int, int | None]] = []

    def progress(label: str, done: int, total: int | None) -> None:
        if label == "git":
            read.append((done, total))

    summary = sync.sync(repo, embed=False, progress=progress)
    part = next(s for s in summary.sources if s.name == "git")
    assert (part.added, part.removed) == (1, 1)
    assert read and read[-1] == (1, 1), read  # was (13, 13): every commit again
    with project.load(repo).open_store() as store:
        keys = {k for (k,) in store.conn.execute("SELECT natural_key FROM nodes WHERE kind = 'git_commit'")}
    assert amended in keys and old not in keys and len(keys) == 13


def test_back_at_commits_memory_holds_reads_none_of_them(repo: Path) -> None:
    """A sync at an older checkout (`git checkout HEAD~N`, a tag, a bisect step), then back: HEAD moved
    forward over commits memory held all along, and the sync read them all again with their patches (cargo:
    6,698 commits, 124 s, the store twice its size). Only a commit new to memory is read."""
    for i in range(12):
        commit(repo, f"feat: step {i}", {f"f{i}.txt": f"{i}\n"})
    init_with_a_diff_window(repo, 3)

    def added() -> dict[str, int]:
        return {s.name: s.added for s in sync.sync(repo, embed=False).sources if s.name in ("git", "diff")}

    assert added() == {"git": 12, "diff": 3}
    git(repo, "checkout", "-q", "HEAD~8")
    assert added() == {"git": 0, "diff": 0}
    git(repo, "checkout", "-q", "main")
    assert added() == {"git": 0, "diff": 0}  # was 8 and 8: every commit in between, patches and all
    commit(repo, "feat: after", {"after.txt": "a\n"})
    assert added() == {"git": 1, "diff": 1}


def rev_lists(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The `git rev-list` commands NexusMem runs from here on, recorded as they run."""
    walks: list[list[str]] = []
    run_ok = gitcmd.run_ok

    def counting(args: list[str], *rest: Any, **kw: Any) -> Any:
        if args[:1] == ["rev-list"]:
            walks.append(args)
        return run_ok(args, *rest, **kw)

    monkeypatch.setattr(gitcmd, "run_ok", counting)
    return walks


def test_a_stash_or_a_note_moves_no_history_and_lists_none(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git stash` (refs/stash), `git notes` (refs/notes/) and tools' own refs are no history: they changed the
    refs' fingerprint, and the next sync listed the whole history to prune nothing (1.4 s on git/git after each
    `git stash`, 1.9 s after `stash pop`). The sync after them has nothing to do."""
    for i in range(3):
        commit(repo, f"feat: step {i}", {f"f{i}.txt": f"{i}\n"})
    project.init(repo)
    sync.sync(repo, embed=False)
    (repo / "f0.txt").write_text("changed\n", encoding="utf-8")
    git(repo, "stash", "-q")
    git(repo, "notes", "add", "-m", "reviewed", "HEAD")
    git(repo, "update-ref", "refs/review/42", "HEAD~1")
    walks = rev_lists(monkeypatch)
    summary = sync.sync(repo, embed=False)
    assert all(s.noop for s in summary.sources if s.name in ("git", "diff")), summary.sources
    assert walks == [], walks
    git(repo, "stash", "pop", "-q")
    assert all(s.noop for s in sync.sync(repo, embed=False).sources if s.name in ("git", "diff"))


def test_a_rewrite_lists_the_whole_history_once_for_both_sources(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an amend (a rebase, a reset) the git and the diff source each prune the commits history no
    longer reaches, and each listed the whole history with `git rev-list` to know them: a second each on
    git/git's 82k commits, twice per post-commit sync. The sync lists it once; both still prune."""
    old = synced_then_amended(repo, 5)
    recorded = rev_lists(monkeypatch)
    summary = sync.sync(repo, embed=False)
    walks = [w for w in recorded if not any(a.startswith(("--count", "--parents")) for a in w)]
    removed = {s.name: s.removed for s in summary.sources}
    assert removed["git"] == 1 and removed["diff"] == 1, removed
    assert len(walks) == 1, walks  # was 2: one per source
    assert len([w for w in recorded if "--parents" in w]) == 1, recorded  # which commits are new: asked once
    with project.load(repo).open_store() as store:
        keys = {k for (k,) in store.conn.execute("SELECT natural_key FROM nodes")}
    assert old not in keys and f"{old}:retry.txt" not in keys


def test_a_pull_rebase_synced_gets_every_pulled_patch_still(repo: Path) -> None:
    """The same pull --rebase through a sync, which tells the diff source what memory holds: the pulled
    commits are new to it, so all their patches are read, past the first sync's window."""
    commit(repo, "feat: base", {"base.txt": "0\n"})
    git(repo, "checkout", "-q", "-b", "local")
    commit(repo, "feat: my local work", {"mine.txt": "1\n"})
    init_with_a_diff_window(repo, 3)
    sync.sync(repo, embed=False)
    git(repo, "checkout", "-q", "main")
    for i in range(6):
        commit(repo, f"feat: upstream {i}", {f"up{i}.txt": f"{i}\n"})
    git(repo, "checkout", "-q", "local")
    git(repo, "rebase", "-q", "main")
    summary = sync.sync(repo, embed=False)
    assert next(s.added for s in summary.sources if s.name == "diff") == 7


# ------------------------------------------------------------------------------------------ repo shapes


def test_empty_repo_then_first_commit(repo: Path) -> None:
    for source in (GitSource(), DiffSource()):
        nodes, result = scan(source, repo)
        assert nodes == [] and result.cursor is not None and result.keep is None
    _, empty = scan(GitSource(), repo)
    sha = commit(repo, "feat: first", {"a.txt": "a\n"})
    nodes, _ = scan(GitSource(), repo, empty.cursor)
    assert [n.natural_key for n in nodes] == [sha]


def test_detached_head(repo: Path) -> None:
    a = commit(repo, "feat: a", {"a.txt": "a\n"})
    commit(repo, "feat: b", {"a.txt": "b\n"})
    git(repo, "checkout", "-q", "--detach", a)
    nodes, result = scan(GitSource(), repo)
    assert [n.natural_key for n in nodes] == [a]
    assert result.cursor is not None and result.cursor.endswith(a)
    c = commit(repo, "fix: on detached", {"a.txt": "c\n"})
    nodes, _ = scan(GitSource(), repo, result.cursor)
    assert [n.natural_key for n in nodes] == [c]


def test_shallow_clone_and_no_origin(repo: Path, tmp_path: Path) -> None:
    shas = [commit(repo, f"feat: {i}", {"a.txt": f"{i}\n"}) for i in range(6)]
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "3", f"file://{repo}", str(clone))
    nodes, result = scan(GitSource(), clone)
    assert {n.natural_key for n in nodes} == set(shas[-3:])
    assert result.keep is not None and result.keep(shas[-1])
    dnodes, _ = scan(DiffSource(), clone)
    assert {n.meta["sha"] for n in dnodes} == set(shas[-3:])
    # the original repository has no origin at all and scanned fine above
    assert subprocess.run(["git", "remote"], cwd=repo, capture_output=True).stdout == b""


# Settings a user may keep in ~/.gitconfig that change what git prints for a commit (its files, its patch).
USER_GIT_CONFIG = (
    "[log]\n\tshowRoot = false\n\tfollow = true\n"
    "[diff]\n\tcontext = 0\n\tinterHunkContext = 10\n\talgorithm = patience\n\tindentHeuristic = false\n"
    "\tsuppressBlankEmpty = true\n\tnoprefix = true\n\tmnemonicPrefix = true\n\trenames = false\n"
)


def test_what_memory_holds_does_not_depend_on_the_users_git_config(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """With `log.showRoot=false` the root commit lost its file list and every patch, silently (and a
    `--depth 1` clone all of its one commit's change: a shallow boundary counts as a root); the diff
    settings changed the stored patches. Memory is the same whatever the user's git config says."""
    guide = [f"heron step {i}" for i in range(40)]
    root = commit(repo, "feat: the heron guide", {"guide.txt": "\n".join(guide) + "\n", "app.py": "A = 1\n"})
    guide[5], guide[12], guide[13], guide[30] = "heron step five", "", "heron thirteen", "heron thirty"
    head = commit(repo, "fix: heron tweaks", {"guide.txt": "\n".join(guide) + "\n", "app.py": "A = 2\n"})
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))

    def memory(root: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {
            n.natural_key: (n.body, n.files) for s in (GitSource(), DiffSource()) for n in scan(s, root)[0]
        }

    plain, plain_shallow = memory(repo), memory(shallow)
    assert {f"{root}:guide.txt", f"{head}:guide.txt"} <= plain.keys()
    assert plain[root][1] == ("app.py", "guide.txt")
    assert plain_shallow.keys() == {head, f"{head}:guide.txt", f"{head}:app.py"}
    with (isolated_home / ".gitconfig").open("a", encoding="utf-8") as fh:
        fh.write(USER_GIT_CONFIG)
    # The config is live: git's own log now shows the root commit without its change.
    assert "guide.txt" not in git(repo, "log", "--stat", "--format=", root)
    assert memory(repo) == plain
    assert memory(shallow) == plain_shallow


def test_non_utf8_message_and_file_name(repo: Path, tmp_path: Path) -> None:
    msg = tmp_path / "msg.txt"
    msg.write_bytes("fix: caf\u00e9 na\u00efve\n\nd\u00e9tails\n".encode("latin-1"))
    name = os.fsdecode(b"caf\xe9.txt")  # not valid UTF-8: a surrogate-escaped str on Linux
    (repo / name).write_bytes(b"x\n")
    # A second name that differs only in the byte UTF-8 cannot read: a file of its own, a diff of its own.
    (repo / os.fsdecode(b"caf\xe8.txt")).write_bytes(b"y\n")
    git(repo, "add", "-A")
    git(repo, "-c", "i18n.commitEncoding=latin1", "commit", "-q", "-F", str(msg))
    # git commit "fixes" invalid UTF-8 by assuming Latin-1; write the object by hand to keep raw bytes.
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    who = b"Test User <test@example.com> 1700000000 +0000"
    raw = b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\nfix: raw \xe9 bytes\n" % (
        tree.encode(),
        parent.encode(),
        who,
        who,
    )
    proc = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=raw, capture_output=True
    )
    git(repo, "update-ref", "HEAD", proc.stdout.decode().strip())

    nodes, _ = scan(GitSource(), repo)
    titles = {n.title for n in nodes}
    assert "fix: café naïve" in titles
    assert "fix: raw é bytes" in titles  # no encoding header: read as Latin-1 (Windows-1252), as a patch is
    for n in nodes:
        n.body.encode("utf-8")  # valid UTF-8 for SQLite
    files = {f for n in nodes for f in n.files}
    assert {"caf\\xe9.txt", "caf\\xe8.txt"} <= files
    dnodes, _ = scan(DiffSource(), repo)
    keys = {n.meta["path"] for n in dnodes}
    assert {"caf\\xe9.txt", "caf\\xe8.txt"} <= keys
    assert len({n.natural_key for n in dnodes}) == len(dnodes)
    for n in dnodes:
        (n.title + n.body + n.natural_key).encode("utf-8")


def test_a_latin1_patch_reads_as_its_doc_does_and_is_found_by_its_words(repo: Path) -> None:
    # A Latin-1 file's patch was stored with U+FFFD (`+# Caf\ufffd notes`), so "cafe" did not find it, while
    # the docs source reads the same bytes as Windows-1252 ("Café", indexed as "cafe"). (A question that
    # writes the accent, "café", finds no node at all, whatever its encoding: another matter.)
    commit(repo, "feat: notes", {"notes.py": "x = 1\n"})
    commit(repo, "edit the notes", {"notes.py": b"# Caf\xe9 notes\nx = 2  # d\xe9j\xe0 vu, \x93quoted\x94\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    items = query_json(repo, "cafe")["items"]
    diffs = [it for it in items if it["kind"] == "code_diff"]
    assert diffs and diffs[0]["title"].startswith("notes.py @"), items
    body = run_cli("-C", str(repo), "show", "--json", diffs[0]["id"]).stdout
    shown = json.loads(body)["body"]
    assert "+# Café notes\n+x = 2  # déjà vu, \u201cquoted\u201d" in shown and "\ufffd" not in shown, shown
    assert [it["kind"] for it in query_json(repo, "deja")["items"]][:1] == ["code_diff"]


def test_a_file_name_with_a_newline_stays_on_the_files_line(repo: Path) -> None:
    """`Files:` is one line of the commit's text; a name holding a newline split it in `query` and `show`."""
    (repo / "new\nline.py").write_text("x = 1\n", encoding="utf-8")
    (repo / "plain.py").write_text("y = 1\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feat: two files")
    [node] = scan(GitSource(), repo)[0]
    [files_line] = [line for line in node.body.splitlines() if line.startswith("Files: ")]
    assert "new\\nline.py (+1 -0)" in files_line and "plain.py (+1 -0)" in files_line
    assert "new\nline.py" in node.files  # the name itself is kept exact
    [diff] = [d for d in scan(DiffSource(), repo)[0] if d.meta["path"] == "new\nline.py"]
    assert "\n" not in diff.title and diff.title.startswith("new\\nline.py @ ")


def test_a_renamed_file_names_its_old_path_too(repo: Path) -> None:
    """A rename with a small edit listed only `module_new.py (+1 -1)`: the old name was nowhere to search."""
    commit(repo, "feat: module", {"module_old.py": "".join(f"line{i} = {i}\n" for i in range(20))})
    git(repo, "mv", "module_old.py", "module_new.py")
    (repo / "module_new.py").write_text("".join(f"line{i} = {i}\n" for i in range(19)) + "line19 = 0\n")
    git(repo, "commit", "-qam", "refactor: rename the module")
    node = by_key(scan(GitSource(), repo)[0])[git(repo, "rev-parse", "HEAD").strip()]
    assert "Files: module_old.py → module_new.py (+1 -1)" in node.body


@pytest.mark.parametrize("change_words", [True, False])
def test_a_commit_that_only_makes_a_file_executable_says_so(repo: Path, change_words: bool) -> None:
    """`chmod +x run.sh && git commit -am x` listed `Files: run.sh (+0 -0)` in show and query: nothing said
    what the commit changed, and "made run.sh executable" could not find it."""
    commit(
        repo,
        "feat: deploy script",
        {"run.sh": "echo deploy\n", "notes.md": "".join(f"{i}\n" for i in range(9))},
    )
    (repo / "run.sh").chmod(0o755)
    git(repo, "commit", "-qam", "chore: fix the deploy job")
    chmod = git(repo, "rev-parse", "HEAD").strip()
    # A rename that also changes the mode and a line (its --raw entry names two paths), and a plain edit.
    git(repo, "mv", "notes.md", "notes.sh")
    (repo / "notes.sh").write_text("".join(f"{i}\n" for i in range(8)) + "x\n", encoding="utf-8")
    (repo / "notes.sh").chmod(0o755)
    (repo / "run.sh").write_text("echo deploy now\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "refactor: notes become a script")
    both = git(repo, "rev-parse", "HEAD").strip()
    cfg = defaults()
    cfg["sources"]["git"]["changeWords"] = change_words
    got = by_key(scan(GitSource(), repo, cfg=cfg)[0])
    assert "Files: run.sh (mode 100644 → 100755, now executable)" in got[chmod].body, got[chmod].body
    assert (
        "Files: notes.md → notes.sh (+1 -1, mode 100644 → 100755, now executable), run.sh (+1 -1)"
        in got[both].body
    ), got[both].body
    diff = by_key(scan(DiffSource(), repo)[0])[f"{both}:notes.sh"]
    assert diff.body.startswith("mode 100644 → 100755, now executable\n@@"), diff.body
    if not change_words:
        return
    # What a user sees: `show` and a query in their words. The commit is found at the head of the list, with
    # the other one that made a file executable and changed run.sh (which of the two near ties is first is
    # the learned last step's call, and its random starts differ on it: docs/evaluation.md, sixty-third wave).
    run_cli("-C", str(repo), "sync", "--no-embed")
    items = query_json(repo, "made run.sh executable")["items"]
    assert {it["ref"] for it in items[:2]} == {chmod, both}, [it["title"] for it in items]
    [item] = [it for it in items if it["ref"] == chmod]
    shown = run_cli("-C", str(repo), "show", item["id"]).output
    assert "run.sh (mode 100644 → 100755, now executable)" in shown and "(+0 -0)" not in shown, shown


def test_submodule(repo: Path, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    sub_sha = commit(sub, "feat: in the submodule", {"s.txt": "s\n"})
    commit(repo, "init", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    sha = commit(repo, "build: add submodule", {})
    nodes, _ = scan(GitSource(), repo)
    assert sub_sha not in by_key(nodes)
    assert set(by_key(nodes)[sha].files) == {".gitmodules", "sub"}
    dnodes, _ = scan(DiffSource(), repo)
    assert f"{sha}:sub" in by_key(dnodes)
    assert "Subproject commit" in by_key(dnodes)[f"{sha}:sub"].body


def test_linked_worktree(repo: Path, tmp_path: Path) -> None:
    a = commit(repo, "feat: a", {"a.txt": "a\n"})
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(wt))
    b = commit(wt, "fix: in worktree", {"w.txt": "w\n"})
    nodes, result = scan(GitSource(), wt)
    assert {n.natural_key for n in nodes} == {a, b}
    assert result.cursor is not None and result.cursor.endswith(b)
    main_nodes, _ = scan(GitSource(), repo)
    assert {n.natural_key for n in main_nodes} == {a}
    dnodes, _ = scan(DiffSource(), wt)
    assert f"{b}:w.txt" in by_key(dnodes)


def test_enabled_follows_config() -> None:
    cfg = defaults()
    assert GitSource().enabled(cfg) and DiffSource().enabled(cfg)
    off = copy.deepcopy(cfg)
    off["sources"]["diff"]["enabled"] = False
    assert GitSource().enabled(off) and not DiffSource().enabled(off)


_MEASURE = """
import resource, sys
try:  # Linux keeps ru_maxrss across exec (the parent's peak): reset the high-water mark and read VmHWM
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
from pathlib import Path
from nexusmem.config import defaults
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git.source import DiffSource, GitSource
root = Path(sys.argv[1])
for source in (DiffSource(), GitSource()):
    ctx = ScanContext(root=root, project_id="p", config=defaults())
    for node in source.scan(ctx).nodes:
        print(source.name, node.natural_key.split(":")[-1], len(node.body), node.meta.get("truncated", False),
              node.meta["insertions"])
try:
    with open("/proc/self/status") as f:
        hwm = next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
except OSError:
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("rss_kb", hwm)
"""


@pytest.mark.slow
def test_50mb_commit_is_truncated_with_bounded_memory(repo: Path) -> None:
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789\n"
    count = 50 * 1024 * 1024 // len(line)
    with (repo / "huge.txt").open("w", encoding="utf-8") as f:
        for _ in range(count // 1000):
            f.write(line * 1000)
        f.write(line * (count % 1000))
    commit(repo, "chore: add a huge generated file", {"small.txt": "s\n"})

    # A fresh interpreter, so its peak RSS is the scan's own (pytest's is not).
    env = dict(os.environ, PYTHONPATH=str(Path(nexusmem.__file__).parent.parent))
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(repo)], capture_output=True, text=True, env=env, check=True
    )
    rows = {tuple(r.split()[:2]): r.split()[2:] for r in proc.stdout.splitlines()}
    limit = defaults()["limits"]["maxBodyChars"]
    body_len, truncated, insertions = rows[("diff", "huge.txt")]
    assert limit - len(line) <= int(body_len) <= limit + 100
    assert truncated == "True" and int(insertions) == count
    assert int(rows[("diff", "small.txt")][2]) == 1
    commit_row = next(v for k, v in rows.items() if k[0] == "git")
    assert int(commit_row[2]) == count + 1  # numstat of both files
    rss_mb = int(proc.stdout.split()[-1]) / 1024
    # Holding the patch would cost > 100 MB (50 MB of bytes plus its decoded str); streaming costs ~ the
    # interpreter.
    assert rss_mb < 60, f"peak RSS {rss_mb:.0f} MB while streaming a 50 MB patch"


def _commit_bytes(repo: Path, message: bytes, author: bytes, encoding: bytes = b"") -> None:
    """A commit whose message and author name are these bytes as they are. `git commit` today reads a message
    that is not UTF-8 as Latin-1 and stores it as UTF-8: an older git stored the bytes, so the object is made
    by hand (with ENCODING, the header i18n.commitEncoding writes)."""
    (repo / "f.txt").write_bytes(message)
    git(repo, "add", "f.txt")
    tree = git(repo, "write-tree").strip().encode()
    parent = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=repo, capture_output=True)
    who = author + b" <a@example.test> 1700000000 +0000"
    raw = b"tree " + tree + b"\n"
    raw += b"parent " + parent.stdout.strip() + b"\n" if parent.returncode == 0 else b""
    raw += b"author " + who + b"\ncommitter " + who + b"\n"
    raw += b"encoding " + encoding + b"\n" if encoding else b""
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        input=raw + b"\n" + message,
        capture_output=True,
        check=True,
    )
    git(repo, "update-ref", "HEAD", made.stdout.decode().strip())


def test_a_latin1_commit_message_reads_as_its_patches_and_docs_do(repo: Path) -> None:
    """A commit message (subject, body, author) that is not UTF-8, as old repositories made with no
    i18n.commitEncoding hold (Latin-1 bytes), was stored with U+FFFD in place of "é" (a search for "café"
    missed it), while a Latin-1 patch or doc reads as Windows-1252. It is read the same way now; a commit whose
    header names its encoding (i18n.commitEncoding) is still read by that header."""
    _commit_bytes(
        repo, "feat: café menu\n\nthe crème brûlée\n".encode("latin-1"), "Zoë Müller".encode("latin-1")
    )
    _commit_bytes(
        repo,
        "fix: Dvořák symphony\n".encode("iso-8859-2"),
        "Dvořák".encode("iso-8859-2"),
        b"ISO-8859-2",
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        commits = {n.title: n for n in store.iter_nodes("git_commit")}
    assert set(commits) == {"feat: café menu", "fix: Dvořák symphony"}, set(commits)
    cafe = commits["feat: café menu"]
    assert "the crème brûlée" in cafe.body and "\ufffd" not in cafe.body, cafe.body
    assert cafe.meta["author"] == "Zoë Müller", cafe.meta
    assert commits["fix: Dvořák symphony"].meta["author"] == "Dvořák"
    assert query_json(repo, "café")["items"][0]["title"] == "feat: café menu"
