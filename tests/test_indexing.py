"""Indexing for retrieval: change words of every commit, the stemmed index, changelog entries linked to their
commits, generic doc headings. Real git repositories, real SQLite, the real sync."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from nexusmem import config, project, sync
from nexusmem.identity import node_id
from nexusmem.retrieve import query, search
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git.changewords import MAX_CHANGE_WORDS, change_words
from nexusmem.sources.git.source import GitSource
from nexusmem.store import migrations
from nexusmem.store.connection import connect

from helpers import commit, console_script, git

# An AWS key the redactor knows (the documentation example key).
SECRET = "AKIAIOSFODNN7EXAMPLE"


def stored(repo: Path, sha: str) -> tuple[str, str]:
    """(words, notes) of the git_commit node of SHA."""
    with project.load(repo).open_store() as store:
        row = store.conn.execute(
            "SELECT words, notes FROM nodes WHERE kind = 'git_commit' AND ref = ?", (sha,)
        ).fetchone()
    assert row is not None, f"no commit node for {sha}"
    return row[0], row[1]


def bm25_refs(repo: Path, text: str) -> list[str]:
    with project.load(repo).open_store() as store:
        ids, _ = search.bm25(store, text)
        nodes = store.get_many(ids)
        return [nodes[i].ref for i in ids]


def test_a_function_named_only_in_the_diff_finds_its_commit(repo: Path) -> None:
    commit(repo, "init", {"net.py": "def connect():\n    return None\n"})
    sha = commit(
        repo,
        "fix the thing",
        {
            "net.py": "def connect():\n    # drop half-closed sockets before reuse\n"
            "    return reapIdleConnections(pool_sockets)\n"
        },
    )
    sync.sync(repo, embed=False)
    words, _ = stored(repo, sha)
    assert "reapidleconnections" in words.split() and "reap" in words.split() and "idle" in words.split()
    assert "sockets" in words.split()  # a comment word
    result = query.run(project.load(repo).open_store(), "reapIdleConnections", project="repo")
    commits = [item.ref for item in result.items if item.kind == "git_commit"]
    assert commits and commits[0] == sha


def test_a_name_a_big_change_defines_is_among_its_words(repo: Path) -> None:
    """A change that renames hundreds of identifiers and defines one new function: the new function is what
    a person asks about ("where does _dfs_package_resources come from?"), and the 300-word cap, which keeps
    the most frequent names, must not cut it."""
    commit(repo, "init", {"inspect.py": "".join(f"old_value_{i} = {i}\n" for i in range(400))})
    many = "".join(f"new_value_{i} = old_value_{i} + other_value_{i}\n" for i in range(400))
    defines = "\n\ndef _dfs_package_resources(dist):\n    return dist\n"
    sha = commit(repo, "Expose manual pages", {"inspect.py": many + defines})
    sync.sync(repo, embed=False)
    words = stored(repo, sha)[0].split()
    assert len(words) == MAX_CHANGE_WORDS
    assert words[:3] == ["_dfs_package_resources", "dfs", "resources"], words[:8]  # "package": a code word


def diff_refs(repo: Path) -> set[str]:
    with project.load(repo).open_store() as store:
        return {r[0] for r in store.conn.execute("SELECT ref FROM nodes WHERE kind = 'code_diff'")}


def test_lock_minified_vendored_bundled_and_binary_files_give_no_words(repo: Path) -> None:
    """...while a package named build (pypa/build keeps its code in src/build/) is source like any other:
    its change has words and a diff."""
    commit(repo, "init", {"README.md": "# x\n"})
    sha = commit(
        repo,
        "bump everything",
        {
            "package-lock.json": '{"lockfilequirk": 1}\n',
            "web/app.min.js": "var minifiedquirk=1;\n",
            "vendor/lib/thing.go": "func vendoredQuirk() {}\n",
            "dist/bundle.js": "var bundledQuirk = 1;\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binaryquirk\x00",
            "src/real.py": "def keptFunction():\n    pass\n",
            "src/build/env.py": "def should_use_backend():\n    return importlib.util.find_spec('venvlib')\n",
        },
    )
    sync.sync(repo, embed=False)
    words = stored(repo, sha)[0].split()
    assert "keptfunction" in words
    assert "should_use_backend" in words and "find_spec" in words
    for skipped in ("lockfilequirk", "minifiedquirk", "vendoredquirk", "bundledquirk", "binaryquirk"):
        assert skipped not in words
    assert f"{sha}:src/build/env.py" in diff_refs(repo) and f"{sha}:dist/bundle.js" not in diff_refs(repo)
    assert bm25_refs(repo, "should_use_backend")[0].startswith(sha)  # the commit, or its diff of env.py


def test_a_store_synced_while_build_dirs_were_skipped_derives_them_once(repo: Path) -> None:
    """A store written by the release that skipped build/ (its config as init wrote it then) gets the words
    and the diff of a change there on its next sync, says so once, and keeps its nodes' ids and times. A
    store whose commits never changed a file under build/ has nothing to redo, and walks nothing again."""
    commit(repo, "init", {"README.md": "# x\n"})
    proj, _ = project.init(repo)
    cfg_path = proj.db_path.parent / "config.json"
    written = json.loads(cfg_path.read_text(encoding="utf-8"))
    written["sources"]["diff"]["skip"] = ["build/*"]  # what the release before did, by a list of its own
    cfg_path.write_text(json.dumps(written), encoding="utf-8")
    sync.sync(repo, embed=False)
    with project.load(repo).open_store() as store:
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 14")
        store.conn.commit()
    lines: list[str] = []
    summary = sync.sync(repo, embed=False, log=lines.append)
    assert not any("change words" in line for line in lines), lines
    assert next(s for s in summary.sources if s.name == "git").noop
    sha = commit(repo, "tidy the backend", {"build/backend.py": "def isolated_backend_env():\n    pass\n"})
    sync.sync(repo, embed=False)
    assert "isolated_backend_env" not in stored(repo, sha)[0].split()
    written["sources"]["diff"]["skip"] = list(config._FORMER_DIFF_SKIP)  # as that release's init wrote it
    cfg_path.write_text(json.dumps(written), encoding="utf-8")
    with project.load(repo).open_store() as store:
        times = {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")}
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 14")
        store.conn.commit()
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append)
    assert any("deriving the change words of the 2 commit(s) already in memory" in line for line in lines), (
        lines
    )
    assert "isolated_backend_env" in stored(repo, sha)[0].split()
    assert f"{sha}:build/backend.py" in diff_refs(repo)
    with project.load(repo).open_store() as store:
        assert store.schema_version() == migrations.LATEST
        now = {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")}
    assert {i: now[i] for i in times} == times
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append)  # once only
    assert not any("change words" in line for line in lines)


def test_a_secret_in_a_diff_never_becomes_a_change_word(repo: Path) -> None:
    commit(repo, "init", {"settings.py": "DEBUG = False\n"})
    sha = commit(
        repo, "configure storage", {"settings.py": f'DEBUG = False\naws_access_key_id = "{SECRET}"\n'}
    )
    sync.sync(repo, embed=False)
    words = stored(repo, sha)[0]
    assert "aws_access_key_id" in words.split()
    assert SECRET.lower() not in words.lower() and "redacted" not in words
    assert bm25_refs(repo, SECRET) == []


def test_change_words_are_capped_most_informative_first() -> None:
    changed = (
        "\n".join(f"value_{i} = plainword{i}" for i in range(400)) + "\nspecialHelper(x)\nspecialHelper(y)\n"
    )
    words = change_words(["def handle_upload(request):"], changed).split()
    assert len(words) == MAX_CHANGE_WORDS
    assert words[:3] == ["handle_upload", "handle", "upload"]  # the hunk header's function comes first
    assert words.index("specialhelper") < words.index("value_0")  # used twice: ahead of the ones used once
    assert not any(w.startswith("plainword") for w in words)  # plain words come after every compound one


def test_incremental_sync_adds_change_words_for_new_commits_only(repo: Path) -> None:
    first = commit(repo, "one", {"a.py": "def alphaRoutine():\n    pass\n"})
    sync.sync(repo, embed=False)
    before = stored(repo, first)
    second = commit(repo, "two", {"b.py": "def betaRoutine():\n    pass\n"})
    summary = sync.sync(repo, embed=False)
    git_part = next(s for s in summary.sources if s.name == "git")
    assert (git_part.added, git_part.updated) == (1, 0)
    assert "betaroutine" in stored(repo, second)[0].split()
    assert stored(repo, first) == before


def test_a_version_5_store_backfills_change_words_on_the_next_sync(repo: Path) -> None:
    shas = [
        commit(repo, f"change {i}", {f"m{i}.py": f"def routine{i}Handler():\n    pass\n"}) for i in range(3)
    ]
    proj, _ = project.init(repo)
    # A store as version 5 wrote it: the nodes of a real scan, no words column, the FTS over title + body.
    for old in proj.db_path.parent.glob("memory.db*"):
        old.unlink()
    conn = connect(proj.db_path)
    migrations.migrate(conn, target=5)
    ctx = ScanContext(root=repo, project_id=proj.id, config=proj.config)
    result = GitSource().scan(ctx)
    nodes = list(result.nodes)
    conn.execute("BEGIN")
    for n in nodes:
        conn.execute(
            "INSERT INTO nodes(id, project_id, kind, source, natural_key, ref, title, body, ts, created_at,"
            " updated_at, signal, provenance, grp, content_hash, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                n.id,
                n.project,
                n.kind,
                n.source,
                n.natural_key,
                n.ref,
                n.title,
                n.body,
                n.ts,
                1000,
                1000,
                n.signal,
                n.provenance,
                n.group,
                n.content_hash(),
                n.meta_json(),
            ),
        )
    conn.execute("INSERT INTO nodes_fts(rowid, title, body) SELECT seq, title, body FROM nodes")
    conn.execute("INSERT INTO sources(name, cursor) VALUES ('git', ?)", (result.cursor,))
    conn.execute("COMMIT")
    conn.close()

    lines: list[str] = []
    summary = sync.sync(repo, embed=False, log=lines.append, only=["git"])
    assert any("deriving the change words of the 3 commit(s) already in memory" in line for line in lines), (
        lines
    )
    git_part = summary.sources[0]
    assert (git_part.added, git_part.updated, git_part.removed) == (0, 3, 0)
    for i, sha in enumerate(shas):
        assert f"routine{i}handler" in stored(repo, sha)[0].split()
    with project.load(repo).open_store() as store:
        assert store.schema_version() == migrations.LATEST
        assert {r[0] for r in store.conn.execute("SELECT created_at FROM nodes")} == {1000}
    assert bm25_refs(repo, "routine1Handler")[0] == shas[1]
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append, only=["git"])  # once only
    assert not any("change words" in line for line in lines)


def test_an_upgraded_store_derives_its_change_words_again_once(repo: Path) -> None:
    """A store written before the names a change defines came first (schema 9) derives every commit's change
    words again on its next sync, says so, and keeps its nodes (same ids and first-recorded times)."""
    head = "".join(f"value_{i} = other_{i}\n" for i in range(400))
    commit(repo, "init", {"m.py": "x = 1\n"})
    sha = commit(repo, "Rework the module", {"m.py": head + "\ndef fresh_helper_name():\n    pass\n"})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        ids = {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")}
        # What the release before wrote: the new name past the cap, and schema 9.
        store.conn.execute(
            "UPDATE nodes SET words = 'value_0 value other' WHERE kind = 'git_commit' AND ref = ?", (sha,)
        )
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 10")
        store.conn.execute("DROP TABLE releases")
        store.conn.execute("DROP TABLE commit_generations")
        store.conn.commit()
    assert bm25_refs(repo, "fresh_helper_name") != [sha]
    lines: list[str] = []
    sync.sync(repo, embed=False, log=lines.append)
    assert any("deriving the change words of the 2 commit(s) already in memory" in line for line in lines), (
        lines
    )
    assert stored(repo, sha)[0].split()[:2] == ["fresh_helper_name", "fresh"]
    with project.load(repo).open_store() as store:
        assert store.schema_version() == migrations.LATEST
        assert {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")} == ids
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append)  # once only
    assert not any("change words" in line for line in lines)


def test_an_inflected_word_finds_the_stem_and_an_exact_match_wins(repo: Path) -> None:
    stem_only = commit(repo, "worker crash on empty queue", {"a.txt": "1"})
    exact = commit(repo, "worker crashed on empty queue", {"a.txt": "2"})
    only_stem = commit(repo, "parser crash with unicode paths", {"b.txt": "1"})
    sync.sync(repo, embed=False)
    refs = bm25_refs(repo, "crashed")
    assert refs[0] == exact  # the exact word beats the same text with the stem only
    assert stem_only in refs and only_stem in refs  # "crashed" finds "crash"
    assert bm25_refs(repo, "parsers crashing")[0] == only_stem


CHANGELOG = """# Changelog

## 2.1.0 (2024-03-01)

### Fixed

- The client hangs forever when the server closes a keep-alive connection early. (#412)
- Uploads of empty files no longer fail with a length mismatch.

## 2.0.0

* Big rewrite
  * nested detail
"""


def test_changelog_entries_link_to_their_commits(repo: Path) -> None:
    commit(repo, "init", {"pool.py": "x = 1\n"})
    by_number = commit(repo, "pool: drop half-closed sockets (#412)", {"pool.py": "x = 2\n"})
    adder = commit(repo, "upload: accept zero-length bodies", {"up.py": "y = 1\n", "CHANGELOG.md": CHANGELOG})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        entries = [n for n in store.iter_nodes("doc_section") if n.source == "changelog"]
        titles = {n.title for n in entries}
        assert "CHANGELOG.md — 2.0.0: * Big rewrite" not in titles  # the bullet marker is not in the title
        hang = next(n for n in entries if "hangs forever" in n.title)
        assert hang.title.startswith("CHANGELOG.md — 2.1.0 (2024-03-01) › Fixed: The client hangs")
        links = {(a, b) for a, b, rel in store.links_from([hang.id]) if rel == "changelog"}
        assert (hang.id, node_id(proj.id, "git_commit", by_number)) in links
        rewrite = next(n for n in entries if "Big rewrite" in n.title)
        assert "nested detail" in rewrite.body
        assert len(entries) == 3
    assert "keep-alive" in stored(repo, by_number)[1]  # the entry lends its words to the commit
    assert "empty files" in stored(repo, adder)[1]  # linked by the commit that added its line
    # A question in the changelog's words now finds the commit, whose own message has none of them.
    refs = bm25_refs(repo, "client hangs forever keep-alive")
    assert by_number in refs
    result = query.run(proj.open_store(), "client hangs forever keep-alive", project="repo")
    shown = [i.ref for i in result.items]
    # The commit the entry describes comes before the entry: the one it names by number. The commit that
    # wrote it (with the other entries of this changelog, and a change of its own) is not what it describes.
    entry = shown.index("CHANGELOG.md#2.1.0 (2024-03-01) › Fixed")
    assert by_number in shown[:entry]
    with proj.open_store() as store:
        described = {b for _a, b, rel in store.links_from([hang.id]) if rel == "changelog"}
    assert described == {node_id(proj.id, "git_commit", by_number)}


def test_a_shallow_clone_deepened_links_the_entries_to_the_commits_it_now_holds(
    repo: Path, tmp_path: Path
) -> None:
    """A shallow clone holds neither the commit an entry names nor the links; the changelog source kept no
    note of the clone's depth, so after `git fetch --unshallow` it found the file unchanged and never
    linked the entry to the commits it could now see."""
    commit(repo, "init", {"pool.py": "x = 1\n"})
    by_number = commit(repo, "pool: drop half-closed sockets (#412)", {"pool.py": "x = 2\n"})
    for i in range(3):
        commit(repo, f"chore: tidy {i}", {f"t{i}.txt": "t\n"})
    commit(repo, "docs: the changelog", {"CHANGELOG.md": CHANGELOG})
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(clone))

    def linked() -> set[str]:
        proj = project.load(clone)
        with proj.open_store() as store:
            hang = next(n for n in store.iter_nodes("doc_section") if "hangs forever" in n.title)
            return {b for _a, b, rel in store.links_from([hang.id]) if rel == "changelog"}

    sync.sync(clone, embed=False)
    target = node_id(project.load(clone).id, "git_commit", by_number)
    assert target not in linked()
    git(clone, "fetch", "-q", "--unshallow")
    sync.sync(clone, embed=False)
    assert target in linked()


def test_an_entry_written_but_not_committed_yet_is_read_and_linked_once_committed(repo: Path) -> None:
    """The changelog source took the index's blob as the file's state but read the work tree: an entry
    appended and not committed yet was "changelog unchanged", and `query zorblax` found nothing until a
    `sync --rebuild`."""
    commit(repo, "docs: the changelog", {"CHANGELOG.md": CHANGELOG})
    sync.sync(repo, embed=False)
    with (repo / "CHANGELOG.md").open("a", encoding="utf-8") as fh:
        fh.write("\n## 2.2.0\n\n- Added zorblax support\n")
    sync.sync(repo, embed=False)
    assert "CHANGELOG.md#2.2.0" in bm25_refs(repo, "zorblax")
    # Committed as it is (the file does not change): the entry is now linked to the commit that added it.
    adder = commit(repo, "feat: zorblax", {"zorblax.py": "z = 1\n"})
    sync.sync(repo, embed=False)
    assert "zorblax support" in stored(repo, adder)[1]


@pytest.mark.parametrize("kind", ["fifo", "device", "link-out"])
def test_a_changelog_that_is_not_a_regular_file_is_never_read(repo: Path, tmp_path: Path, kind: str) -> None:
    """The changelog source stat'ed the work tree's file through links and read whatever was there: a FIFO in
    place of CHANGELOG.md hung `sync` for good (and the post-commit hook's, and every sync after it with
    "another sync is still running"), /dev/zero ran it out of memory, and a link to a file outside the
    repository stored that file's entries. The docs source refuses all three, and so does it now."""
    commit(repo, "docs: the changelog", {"CHANGELOG.md": CHANGELOG})
    sync.sync(repo, embed=False)
    path = repo / "CHANGELOG.md"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        outside = tmp_path / "outside" / "secret.md"
        outside.parent.mkdir()
        outside.write_text("# Changelog\n\n## 9.9.9\n\n- The outsider zorblax entry\n", encoding="utf-8")
        path.symlink_to(outside)
    done = subprocess.run(
        [console_script(), "-C", str(repo), "sync", "--no-embed", "--source", "changelog"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert bm25_refs(repo, "zorblax") == []
    # Nothing is read from it: the committed entries go, as a deleted file's do.
    assert doc_paths_by_source(repo).get("changelog") is None


def test_a_changelog_file_named_with_a_secret_keeps_its_entries(repo: Path) -> None:
    """A news fragment whose name holds a secret lost its entry: the changelog source kept its raw key while
    the node's key had the name redacted, so the sync pruned the entry it had just stored, and every sync
    after a changelog change said `changelog +1 -1`."""
    name = f"changelog.d/{SECRET}.bugfix.md"
    commit(repo, "docs: fragments", {name: "- Fix the zorblax crash on empty input.\n"})
    sync.sync(repo, embed=False)
    assert doc_paths_by_source(repo).get("changelog") == {"changelog.d/«redacted:aws-key».bugfix.md"}
    assert "changelog.d/«redacted:aws-key».bugfix.md#" in bm25_refs(repo, "zorblax")[0]
    commit(repo, "docs: another fragment", {"changelog.d/7.feature.md": "- Add the quorble option.\n"})
    summary = sync.sync(repo, embed=False)
    (changelog,) = [s for s in summary.sources if s.name == "changelog"]
    assert (changelog.added, changelog.removed) == (1, 0)
    assert len(doc_paths_by_source(repo)["changelog"]) == 2


def test_a_changelog_entry_is_titled_without_its_links_urls(repo: Path) -> None:
    """Release tools write each entry with links ("Fix copy ([#413](https://github.com/o/r/pull/413))"): the
    title shows what a reader sees, and the entry still links to its commit by the number."""
    fix = commit(repo, "copy: keep the mode bits (#413)", {"copy.py": "x = 1\n"})
    log = (
        "# Changelog\n\n## [3.0.0](https://github.com/o/r/compare/v2.0.0...v3.0.0) (2024-05-01)\n\n"
        "- copy keeps the mode bits ([#413](https://github.com/o/r/pull/413)) ([abc1234](https://github.com/o/r/commit/abc1234))\n"
    )
    commit(repo, "release 3.0.0", {"CHANGELOG.md": log})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        (entry,) = [n for n in store.iter_nodes("doc_section") if n.source == "changelog"]
        assert entry.title == "CHANGELOG.md — 3.0.0 (2024-05-01): copy keeps the mode bits (#413) (abc1234)"
        assert entry.ref == "CHANGELOG.md#3.0.0 (2024-05-01)"
        assert "https://github.com/o/r/pull/413" in entry.body  # the text as written
        links = {b for _, b, rel in store.links_from([entry.id]) if rel == "changelog"}
        assert node_id(proj.id, "git_commit", fix) in links


CHANGES_RST = """Version 2.1.0
-------------

Released 2024-03-01

-   The client hangs forever when the server closes a keep-alive
    connection early. :issue:`410` :pr:`412`
-   Uploads of empty files no longer fail.

Version 2.0.0
-------------

-   Big rewrite.
"""


def test_rst_changelog_entries_and_sphinx_issue_roles_link_to_commits(repo: Path) -> None:
    """Sphinx projects write their release notes in reStructuredText (CHANGES.rst) and name pull requests
    with roles (:pr:`412`), not "#412": both are read, and the entry's words find the commit."""
    commit(repo, "init", {"pool.py": "x = 1\n"})
    by_number = commit(repo, "pool: drop half-closed sockets (#412)", {"pool.py": "x = 2\n"})
    commit(repo, "docs: changes", {"CHANGES.rst": CHANGES_RST})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        entries = [n for n in store.iter_nodes("doc_section") if n.source == "changelog"]
        hang = next(n for n in entries if "hangs forever" in n.title)
        assert hang.title.startswith("CHANGES.rst — Version 2.1.0: The client hangs forever")
        links = {(a, b) for a, b, rel in store.links_from([hang.id]) if rel == "changelog"}
        assert (hang.id, node_id(proj.id, "git_commit", by_number)) in links
        assert len(entries) == 4  # and the line before the bullets, "Released 2024-03-01"
        assert "CHANGES.rst — Version 2.1.0: Released 2024-03-01" in {n.title for n in entries}
    assert "keep-alive" in stored(repo, by_number)[1]
    assert by_number in bm25_refs(repo, "client hangs forever keep-alive")


def test_rst_changelog_titles_never_become_entry_text() -> None:
    from nexusmem.sources.changelog import split_entries

    text = (
        "=========\nChangelog\n=========\n\nVersion 2.0\n~~~~~~~~~~~\n\nProse fixes :issue:`7`.\n\n"
        "Version 1.0\n~~~~~~~~~~~\n\n- bullet one (#3)\n"
    )
    shown = [(e.version, e.text, e.numbers) for e in split_entries(text, "CHANGES.rst")]
    assert shown == [
        ("Version 2.0", "Prose fixes :issue:`7`.", ["7"]),
        ("Version 1.0", "- bullet one (#3)", ["3"]),
    ]


def test_rst_labels_above_release_titles_never_become_entry_text() -> None:
    """coverage.py's CHANGES.rst puts a label above each release (`.. _changes_7-3-4:`): the label opens that
    release's section, and neither it nor the title under it is an entry's text."""
    from nexusmem.sources.changelog import split_entries

    text = (
        "Changes\n=======\n\n.. _changes_2-0:\n\nVersion 2.0\n-----------\n\n- Fix: prose fixes.\n\n"
        ".. _changes_1-0:\n.. _changes_1-0-0:\n\nVersion 1.0\n-----------\n\n- bullet one (#3)\n"
    )
    shown = [(e.version, e.text) for e in split_entries(text, "CHANGES.rst")]
    assert shown == [("Version 2.0", "- Fix: prose fixes."), ("Version 1.0", "- bullet one (#3)")]


COVERAGE_CHANGES_RST = """Change history
==============

    .. When updating the "Unreleased" header, use this format:
    ..
    ..  .. _changes_9-8-1:

Unreleased
----------

- Fix: the okapi core raised KeyError, as described in `issue 2086`_.

.. _issue 2086: https://github.com/o/r/issues/2086


.. start-releases

.. _changes_7-3-4:

Version 7.3.4 — 2023-12-20
--------------------------

- Fix: the ``gecko`` report lost its styles, closing `Issue 1732`_.

- Docs: the `GitHub organization`_ moved.

.. _issue 1732: https://github.com/o/r/pull/1732
.. _GitHub organization:
   https://github.com/o
"""


def test_rst_hyperlink_targets_and_comments_are_not_changelog_entries(repo: Path) -> None:
    """161 of coverage.py's 972 changelog "entries" were link-target blocks (`.. _issue 1732: https://…`)
    or labels and comments, shown in every "what changed in X" answer. They are not entries; the URL of a
    target an entry names (`` `issue 1732`_ ``) links that entry to the commits of its number."""
    from nexusmem.sources.changelog import split_entries

    shown = [(e.version, e.first_line, e.numbers) for e in split_entries(COVERAGE_CHANGES_RST, "CHANGES.rst")]
    assert shown == [
        ("Unreleased", "- Fix: the okapi core raised KeyError, as described in `issue 2086`_.", ["2086"]),
        (
            "Version 7.3.4 — 2023-12-20",
            "- Fix: the ``gecko`` report lost its styles, closing `Issue 1732`_.",
            ["1732"],
        ),
        ("Version 7.3.4 — 2023-12-20", "- Docs: the `GitHub organization`_ moved.", []),
    ]
    commit(repo, "init", {"report.py": "x = 1\n"})
    fix = commit(repo, "report: keep the styles (#1732)", {"report.py": "x = 2\n"})
    commit(repo, "docs: changes", {"CHANGES.rst": COVERAGE_CHANGES_RST})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        entries = [n for n in store.iter_nodes("doc_section") if n.source == "changelog"]
        assert len(entries) == 3
        gecko = next(n for n in entries if "gecko" in n.title)
        # Its title as a reader sees it, its text as written.
        assert (
            gecko.title
            == "CHANGES.rst — Version 7.3.4 — 2023-12-20: Fix: the `gecko` report lost its styles, closing Issue 1732."
        )
        links = {b for _, b, rel in store.links_from([gecko.id]) if rel == "changelog"}
        assert node_id(proj.id, "git_commit", fix) in links


def test_rdoc_history_entries_carry_their_release() -> None:
    """History.rdoc (rake, minitest, hoe-made gems) heads each release with `=== 13.2.1`: an entry is dated
    by it, and its PR number is read."""
    from nexusmem.sources.changelog import split_entries

    text = (
        "= History\n\n=== 13.2.1\n\n* Suppressed a backtrace line by @a in #554\n"
        "* Bump actions by @b in #553\n\n=== 13.0.0\n\n==== Bug fixes\n\n"
        "* Fixed a crash on an empty Rakefile. Pull Request #12\n  second line of it\n"
    )
    shown = [(e.version, e.first_line, e.numbers) for e in split_entries(text, "History.rdoc")]
    assert shown == [
        ("13.2.1", "* Suppressed a backtrace line by @a in #554", ["554"]),
        ("13.2.1", "* Bump actions by @b in #553", ["553"]),
        ("13.0.0 › Bug fixes", "* Fixed a crash on an empty Rakefile. Pull Request #12", ["12"]),
    ]


def changelog_entries(repo: Path) -> dict[str, str]:
    """Title → body of every changelog entry stored."""
    with project.load(repo).open_store() as store:
        return {n.title: n.body for n in store.iter_nodes("doc_section") if n.source == "changelog"}


MIGRATION = """# Changelog

## 2.0.0

This release drops support for Python 2 and renames the `frob` module to `widget`.

- Added the `--zebra` flag.
- Fixed a crash on empty input.

Thanks to everyone who tested the betas.

### Migration

Replace the old call with the new one:

```diff
- frob.run(x)
+ widget.run(x)
```
"""


def test_a_changelog_keeps_its_prose_and_never_cuts_its_code_into_entries(repo: Path) -> None:
    """A release's intro paragraph and a migration note's prose were in no node (the docs source leaves
    changelogs alone), and the lines of its ```diff block became two entries, "frob.run(x)" and
    "widget.run(x)". Every paragraph is an entry now, and the code stays with the prose it follows."""
    commit(repo, "Release 2.0.0", {"CHANGELOG.md": MIGRATION})
    sync.sync(repo, embed=False)
    entries = changelog_entries(repo)
    assert set(entries) == {
        "CHANGELOG.md — 2.0.0: This release drops support for Python 2 and renames the `frob` module to `widget`.",
        "CHANGELOG.md — 2.0.0: Added the `--zebra` flag.",
        "CHANGELOG.md — 2.0.0: Fixed a crash on empty input.",
        "CHANGELOG.md — 2.0.0: Thanks to everyone who tested the betas.",
        "CHANGELOG.md — 2.0.0 › Migration: Replace the old call with the new one:",
    }, sorted(entries)
    migration = entries["CHANGELOG.md — 2.0.0 › Migration: Replace the old call with the new one:"]
    assert "- frob.run(x)\n+ widget.run(x)\n```" in migration
    result = query.run(project.load(repo).open_store(), "drops support for Python 2", project="repo")
    assert result.items and "drops support for Python 2" in result.items[0].title


KEEP_A_CHANGELOG = """# Changelog

## [Unreleased]
### Added
- Support for okapi herds.

## [2.0.0] - 2024-03-01
### Removed
- The `--legacy` flag is removed.

[Unreleased]: https://github.com/acme/widget/compare/v2.0.0...HEAD
[2.0.0]: https://github.com/acme/widget/compare/v1.1.0...v2.0.0
"""


def test_keep_a_changelog_unreleased_entries_keep_their_version_and_the_links_stay_out(repo: Path) -> None:
    """Keep a Changelog's `## [Unreleased]` → `### Added` entry was stored as "Added: Support for…", its
    version lost ("unreleased changes" did not find it), and the compare links at the file's end were
    part of the oldest release's last entry."""
    commit(repo, "Note okapi support", {"CHANGELOG.md": KEEP_A_CHANGELOG})
    sync.sync(repo, embed=False)
    entries = changelog_entries(repo)
    assert set(entries) == {
        "CHANGELOG.md — [Unreleased] › Added: Support for okapi herds.",
        "CHANGELOG.md — [2.0.0] - 2024-03-01 › Removed: The `--legacy` flag is removed.",
    }, sorted(entries)
    assert entries["CHANGELOG.md — [2.0.0] - 2024-03-01 › Removed: The `--legacy` flag is removed."] == (
        "- The `--legacy` flag is removed."
    )
    result = query.run(project.load(repo).open_store(), "unreleased changes", project="repo")
    assert result.items and "okapi" in result.items[0].title


GNU_NEWS = """GNU Widget NEWS                                    -*- outline -*-

* Noteworthy changes in release 3.1 (2023-05-01) [stable]

** Bug fixes

  widget no longer crashes when the config file is empty.
  [bug introduced in widget-3.0]

** New features

  widget now accepts --zebra to print stripes.

* Noteworthy changes in release 3.0 (2022-01-01) [stable]

** Changes in behavior

  The default timeout is now 60 seconds.
"""


def test_a_gnu_news_outline_is_read_release_by_release(repo: Path) -> None:
    """GNU projects head each release of their NEWS with `* Noteworthy changes in release 3.1 …` and its
    parts with `** Bug fixes`. Read as Markdown, those were bullets: each release was one entry whose
    version was "NEWS", and "what changed in 3.1" put 3.0 first."""
    commit(repo, "Release 3.1", {"NEWS": GNU_NEWS})
    sync.sync(repo, embed=False)
    titles = set(changelog_entries(repo))
    release = "NEWS — Noteworthy changes in release 3.1 (2023-05-01) [stable]"
    assert f"{release} › Bug fixes: widget no longer crashes when the config file is empty." in titles
    assert f"{release} › New features: widget now accepts --zebra to print stripes." in titles
    assert not any(t.startswith("NEWS — NEWS: * Noteworthy") for t in titles), sorted(titles)
    result = query.run(project.load(repo).open_store(), "what changed in 3.1", project="repo")
    notes = [item.title for item in result.items if item.title.startswith("NEWS — ")]
    assert notes and notes[0].startswith(release), notes


def test_changelog_entries_link_to_the_commits_they_name_by_id(repo: Path) -> None:
    """Generated changelogs name commits, not numbers: a commit link (conventional-changelog,
    release-please, semantic-release) or the abbreviated id that starts a changesets entry."""
    commit(repo, "init", {"a.py": "1"})
    linked = commit(repo, "fix(pool): drop half-closed sockets", {"a.py": "2"})
    leading = commit(repo, "parser: accept a trailing comma", {"b.py": "1"})
    commit(repo, "release", {"c.py": "1"})  # a commit named by no entry
    notes = (
        "# Changelog\n\n## 1.1.0\n\n"
        f"* **pool:** keep-alive sockets closed early make the client hang "
        f"([{linked[:7]}](https://github.com/o/r/commit/{linked}))\n\n"
        f"## 1.0.1\n\n### Patch Changes\n\n- {leading[:7]}: Trailing commas no longer break parsing\n"
        "- 0000000: an id no commit has\n"
    )
    writer = commit(repo, "docs: release notes", {"CHANGELOG.md": notes, "x.md": "x"})
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        links = {
            n.body.split("\n")[0][:12]: {b for _a, b, rel in store.links_from([n.id]) if rel == "changelog"}
            for n in store.iter_nodes("doc_section")
            if n.source == "changelog"
        }
    # Each entry links to the commit it names; the commit that wrote it (a few entries at once) only when it
    # names none: "docs: release notes" changed docs only, bookkeeping beside the change named.
    assert links["* **pool:** "] == {node_id(proj.id, "git_commit", linked)}
    assert links[f"- {leading[:7]}: T"] == {node_id(proj.id, "git_commit", leading)}
    assert links["- 0000000: a"] == {node_id(proj.id, "git_commit", writer)}  # no commit has that id
    assert "keep-alive" in stored(repo, linked)[1]  # the entry's words reach the commit it names
    assert "Trailing commas" in stored(repo, leading)[1]


def test_a_release_commit_that_writes_many_entries_is_not_linked_to_them(repo: Path) -> None:
    commit(repo, "init", {"a.py": "1"})
    bullets = "\n".join(f"- Change number {i} to the frobnicator." for i in range(12))
    release = commit(repo, "Release 3.0", {"CHANGES.md": f"# 3.0\n\n{bullets}\n"})
    sync.sync(repo, embed=False)
    assert stored(repo, release)[1] == ""


WORKFLOW = """name: release
on:
  push:
    tags: ['v*']
jobs:
  - build: cargo build --release (#7)
  - upload: gh release upload
"""
RELEASE_NOTES_MD = (
    "# Release Notes\n\n## 1.1.0\n\n- Retries honour the backoff cap (#7)\n\n## 1.0.0\n\n- First release\n"
)


def doc_paths_by_source(repo: Path) -> dict[str, set[str]]:
    """Source ("docs", "changelog") → the paths of the doc sections it stored."""
    with project.load(repo).open_store() as store:
        out: dict[str, set[str]] = {}
        for n in store.iter_nodes("doc_section"):
            out.setdefault(n.source, set()).add(n.meta["path"])
        return out


def test_a_version_history_and_an_older_majors_changelog_are_release_notes(repo: Path) -> None:
    """golang-jwt keeps its old notes in VERSION_HISTORY.md, league/commonmark an older major's in
    CHANGELOG-1.x.md: their entries link to the commits they name, as CHANGELOG.md's do, and are not read
    as usage docs. A release checklist is a guide, not notes."""
    fix = commit(repo, "Fix audience check for string slices (#12)", {"claims.go": "package jwt\n"})
    commit(
        repo,
        "notes",
        {
            "VERSION_HISTORY.md": "# History\n\n## 3.2.1\n\n* Fixed type confusion in VerifyAudience (#12)\n",
            "CHANGELOG-1.x.md": "# Changelog\n\n## 1.6.0\n\n- Audience may now be a list (#12)\n",
            "RELEASE-CHECKLIST.md": "# Releasing\n\n## Tagging\n\nPush the tag (#12).\n",
        },
    )
    sync.sync(repo, embed=False)
    paths = doc_paths_by_source(repo)
    assert paths["changelog"] == {"VERSION_HISTORY.md", "CHANGELOG-1.x.md"}
    assert paths["docs"] == {"RELEASE-CHECKLIST.md"}
    notes = stored(repo, fix)[1]
    assert "type confusion in VerifyAudience" in notes and "Audience may now be a list" in notes
    assert "Push the tag" not in notes


def test_notes_kept_as_files_in_a_history_or_changelog_folder_are_release_notes(repo: Path) -> None:
    """pypa/hatch keeps its release history as docs/history/hatch.md; towncrier projects keep one news
    fragment per change in changelog/. Their entries are changelog entries linked to the commit that added
    them, not usage docs; the folder's README, which says how to write a fragment, stays a doc."""
    fix = commit(
        repo,
        "Restore Ctrl-C in run",
        {
            "run.py": "signal.signal(SIGINT, SIG_DFL)\n",
            "docs/history/tool.md": "# Tool history\n\n## Unreleased\n\n***Fixed:***\n\n"
            "- Fix commands no longer being interruptible with Ctrl-C\n",
        },
    )
    frag = commit(
        repo,
        "Close the pool on exit",
        {
            "pool.py": "pool.close()\n",
            "changelog/1219.bugfix.rst": "Workers no longer linger after the test run.\n",
        },
    )
    commit(
        repo,
        "Say how to add a fragment",
        {
            "changelog/README.rst": "How to add a news fragment\n===========================\n\nName it NUMBER.TYPE.rst.\n"
        },
    )
    sync.sync(repo, embed=False)
    paths = doc_paths_by_source(repo)
    assert paths["changelog"] == {"docs/history/tool.md", "changelog/1219.bugfix.rst"}
    assert paths["docs"] == {"changelog/README.rst"}
    assert "no longer being interruptible with Ctrl-C" in stored(repo, fix)[1]
    assert "Workers no longer linger" in stored(repo, frag)[1]


TOWNCRIER_TEMPLATE = """{% for section, _ in sections.items() %}
{% if sections[section] %}
{% for category, val in definitions.items() if category in sections[section]%}
{{ definitions[category]['name'] }}

{% for text, values in sections[section][category].items() %}
- {{ text }}
{% endfor %}
{% endfor %}
{% else %}
No significant changes.
{% endif %}
{% endfor %}
"""


def test_a_test_fixture_a_template_and_an_include_page_are_not_release_notes(repo: Path) -> None:
    """A test suite's tests/fixtures/CHANGELOG.md answered "what's new in 9.9.9" as the project's release;
    towncrier's changelog.d/template.rst became an entry "template.rst: {{ text }}"; Sphinx's
    docs/changelog.rst, which only includes ../NEWS, became entries of its own. The docs source's exclusions
    (test folders, fixtures, the config's globs) hold for release notes too, and neither a template nor an
    include page is notes; the project's own notes and fragments are read as before."""
    commit(
        repo,
        "Release 1.0.0",
        {
            "CHANGELOG.md": "# Changelog\n\n## 1.0.0\n\n- First release of the widget.\n",
            "tests/fixtures/CHANGELOG.md": "# Changelog\n\n## 9.9.9\n\n- Fixture okapi entry for the parser.\n",
            "changelog.d/template.rst": TOWNCRIER_TEMPLATE,
            "changelog.d/12.bugfix.rst": "The parser no longer drops okapi dates.\n",
            "docs/changelog.rst": ".. Changelog transcluded from the NEWS file\n\n=========\nChangelog\n"
            "=========\n\n.. include:: ../CHANGELOG.md\n",
        },
    )
    sync.sync(repo, embed=False)
    paths = doc_paths_by_source(repo)
    assert paths["changelog"] == {"CHANGELOG.md", "changelog.d/12.bugfix.rst"}, paths
    assert "docs" not in paths, paths  # nor read as docs instead
    result = query.run(project.load(repo).open_store(), "what's new in 9.9.9", project="repo")
    assert not any("9.9.9" in item.title for item in result.items), [item.title for item in result.items]
    assert not any("9.9.9" in note for note in result.notes), result.notes


def test_a_news_fragment_not_added_yet_is_read_as_an_untracked_page_is(repo: Path) -> None:
    """A towncrier fragment written but not `git add`ed yet was read by neither source, though an untracked
    docs page is, and an uncommitted line in a tracked CHANGELOG is. It is read from the work tree too; a
    fragment git ignores is not."""
    commit(
        repo,
        "init",
        {"CHANGELOG.md": "# Changelog\n\n## 1.0.0\n\n- First release.\n", ".gitignore": "*.draft.md\n"},
    )
    (repo / "changelog.d").mkdir()
    (repo / "changelog.d" / "99.feature.md").write_text("Widgets can now be frobnicated.\n", encoding="utf-8")
    (repo / "changelog.d" / "100.feature.draft.md").write_text("Ignored okapi draft.\n", encoding="utf-8")
    sync.sync(repo, embed=False)
    assert doc_paths_by_source(repo)["changelog"] == {"CHANGELOG.md", "changelog.d/99.feature.md"}
    result = query.run(project.load(repo).open_store(), "frobnicated widgets", project="repo")
    assert result.items and result.items[0].title.startswith("changelog.d/99.feature.md — "), result.items


def test_a_news_fragment_whose_file_name_is_not_utf8_is_read(repo: Path) -> None:
    """A fragment named in Latin-1 (`changes/café-1220.bugfix.rst` written by a Latin-1 system) was
    neither read nor counted: its name was decoded with U+FFFD, a file that does not exist. It is read
    by its real name and stored with the byte as `\\xe9`, as a doc with such a name is."""
    name = os.fsdecode(b"changes/caf\xe9-1220.bugfix.rst")
    fix = commit(
        repo,
        "Close the pool on exit",
        {"pool.py": "pool.close()\n", name: "Workers no longer linger after the test run.\n"},
    )
    summary = sync.sync(repo, embed=False)
    part = next(s for s in summary.sources if s.name == "changelog")
    assert (part.added, part.skipped, part.problems) == (1, 0, []), part
    assert doc_paths_by_source(repo)["changelog"] == {"changes/caf\\xe9-1220.bugfix.rst"}
    assert "Workers no longer linger" in stored(repo, fix)[1]  # linked to the commit that added it


def test_a_test_suites_markdown_is_its_input_not_its_docs(repo: Path) -> None:
    """A Markdown linter keeps hundreds of test inputs (test/*.md); a site generator, whole test sites.
    They are not read as documentation; the docs beside them are, and so is a page of the docs in a folder
    named like a test suite's (a pytest plugin's `docs/reference/fixtures/`). A config that still holds the
    exclude list an earlier init wrote means today's, and the next sync drops the test pages it had read."""
    commit(
        repo,
        "docs and fixtures",
        {
            "docs/rules.md": "# Rules\n\n## Line length\n\nLines longer than 80 characters are reported.\n",
            "test/long-lines.md": "# Heading\n\n## Line length\n\nThis line is deliberately far too long.\n",
            "lib/tests/fixtures/page.markdown": "# Fixture\n\nA page the generator renders.\n",
            "docs/reference/fixtures/index.rst": "Fixtures\n========\n\nunused_tcp_port\n---------------\n"
            "Finds and yields a single unused TCP port on the localhost interface.\n",
        },
    )
    proj, _ = project.init(repo)
    cfg_path = proj.db_path.parent / "config.json"

    def doc_paths() -> set[str]:
        with project.load(repo).open_store() as store:
            return {n.meta["path"] for n in store.iter_nodes("doc_section") if n.source == "docs"}

    data = json.loads(cfg_path.read_text(encoding="utf-8"))
    data["sources"]["docs"]["exclude"] = [*config._FORMER_DOCS_EXCLUDE, "drafts/*"]  # edited: kept
    cfg_path.write_text(json.dumps(data), encoding="utf-8")
    sync.sync(repo, embed=False)
    assert doc_paths() == {
        "docs/rules.md",
        "test/long-lines.md",
        "lib/tests/fixtures/page.markdown",
        "docs/reference/fixtures/index.rst",
    }
    data["sources"]["docs"]["exclude"] = list(config._FORMER_DOCS_EXCLUDE)  # as init wrote it: today's
    cfg_path.write_text(json.dumps(data), encoding="utf-8")
    sync.sync(repo, embed=False)
    assert doc_paths() == {"docs/rules.md", "docs/reference/fixtures/index.rst"}


def test_only_release_notes_are_read_as_release_notes_and_only_once(repo: Path, monkeypatch) -> None:
    """A CI workflow (`.github/workflows/release.yml`), a release script and a class file named History are
    not release notes: their lines never become changelog entries nor lend words to a commit. The files
    that are (any text format, or none) still do, and `docs/release-notes.md` is read as entries only,
    not a second time as usage docs. A store synced before these rules drops what they leave out."""
    from nexusmem.sources import changelog, docs

    fix = commit(repo, "fix: stop double close (#7)", {"a.py": "1"})
    commit(
        repo,
        "release tooling and notes",
        {
            ".github/workflows/release.yml": WORKFLOW,
            "scripts/release.py": "# - Bump the version (#7)\nprint('bump')\n",
            "lib/history.rb": "# - History of visited pages (#7)\nclass History; end\n",
            "NEWS": "# 1.0\n\n- Double close fixed (#7)\n",
            "History.rdoc": "= 1.0\n\n* Sockets no longer closed twice (#7)\n",
            "docs/release-notes.md": RELEASE_NOTES_MD,
            "docs/guide.md": "# Guide\n\n## Retries\n\nSet the backoff cap.\n",
        },
    )

    # The rules before: any extension, and the docs source read every Markdown file. (Patched in a context of
    # its own: `monkeypatch.undo()` would also undo the isolated HOME and write to the real one.)
    with monkeypatch.context() as before:
        before.setattr(
            changelog,
            "is_release_notes",
            lambda p: (
                p.count("/") <= 2
                and bool(
                    re.match(
                        r"^(changelog|changes|news|history|releases?|release[-_ ]notes)(\.[a-z]+)?$",
                        p.rsplit("/", 1)[-1],
                        re.I,
                    )
                )
            ),
        )
        before.setattr(docs, "is_release_notes", lambda p: False)
        sync.sync(repo, embed=False)
        assert "cargo build" in stored(repo, fix)[1]
        assert "docs/release-notes.md" in doc_paths_by_source(repo)["docs"]
    sync.sync(repo, embed=False)
    paths = doc_paths_by_source(repo)
    assert paths["changelog"] == {"NEWS", "History.rdoc", "docs/release-notes.md"}
    assert paths["docs"] == {"docs/guide.md"}
    notes = stored(repo, fix)[1]
    assert "Double close fixed" in notes and "closed twice" in notes and "backoff cap" in notes
    assert "cargo build" not in notes and "Bump the version" not in notes and "visited pages" not in notes


def test_a_page_named_like_release_notes_that_the_changelog_source_does_not_read_is_docs(repo: Path) -> None:
    """The default excludes `HISTORY*`, `RELEASES*`, `CHANGELOG*` leave release notes to the changelog
    source; a file they match that it does not read was read by neither: vuejs/router's guide page on
    history modes, flake8's page on how it makes releases, a crate's notes deeper than the changelog source
    looks. Those are docs (and a question finds them); the notes it reads are still read once, as entries."""
    commit(
        repo,
        "docs and notes",
        {
            "packages/docs/guide/history-mode.md": "# Different History modes\n\n## HTML5 Mode\n\n"
            "Configure the server to answer every unknown URL with index.html.\n",
            "docs/source/internal/releases.rst": "Releasing\n=========\n\nPatch Releases\n--------------\n\n"
            "Patch releases should only ever have bug fixes in them.\n",
            "crates/filter/glob/CHANGELOG.md": "# Changelog\n\n## v1.0.1\n\n- Matching of brace sets mended.\n",
            "CHANGELOG.md": "# Changelog\n\n## 1.0.0\n\n- First release of the widget.\n",
        },
    )
    sync.sync(repo, embed=False)
    paths = doc_paths_by_source(repo)
    assert paths["docs"] == {
        "packages/docs/guide/history-mode.md",
        "docs/source/internal/releases.rst",
        "crates/filter/glob/CHANGELOG.md",
    }
    assert paths["changelog"] == {"CHANGELOG.md"}
    with project.load(repo).open_store() as store:
        top = query.run(
            store, "which URL must the server answer with index.html?", project="p", vectors=False
        )
        assert top.items and top.items[0].ref == "packages/docs/guide/history-mode.md#HTML5 Mode"
        top = query.run(
            store, "may a patch release carry anything but bug fixes?", project="p", vectors=False
        )
        assert top.items and top.items[0].ref == "docs/source/internal/releases.rst#Patch Releases"


def test_a_generic_doc_heading_carries_its_parent(repo: Path) -> None:
    doc = "# Guide\n\n## Retries\n\nHow retries work.\n\n### Example\n\nretry(3)\n\n## Timeouts\n\nText.\n"
    commit(repo, "docs", {"docs/guide.md": doc})
    sync.sync(repo, embed=False)
    with project.load(repo).open_store() as store:
        titles = {n.meta["heading"]: (n.title, n.ref) for n in store.iter_nodes("doc_section")}
    assert titles["Example"] == ("docs/guide.md — Retries › Example", "docs/guide.md#Example")
    assert titles["Timeouts"][0] == "docs/guide.md — Timeouts"


def test_changelog_links_survive_a_rebuild(repo: Path) -> None:
    sha = commit(
        repo, "fix: stop double close (#7)", {"a.py": "1", "NEWS.md": "# 1.0\n\n- Double close fixed (#7)\n"}
    )
    sync.sync(repo, embed=False)
    assert "Double close" in stored(repo, sha)[1]
    sync.sync(repo, embed=False, rebuild=True)
    assert "Double close" in stored(repo, sha)[1]
    git(repo, "rm", "-q", "NEWS.md")
    commit(repo, "drop news", {})
    sync.sync(repo, embed=False)
    assert stored(repo, sha)[1] == ""
    assert sha in bm25_refs(repo, "double close stop")  # the commit itself is still found by its own words


def test_shell_commands_leave_the_stemmed_index_and_prose_stays(tmp_path: Path) -> None:
    """Migration 13: a command line is not prose. The stemmed index keeps commits and docs ("crashed"
    still finds "crash" there) and no longer holds commands, also after their text is rewritten."""
    conn = connect(tmp_path / "m.db")
    migrations.migrate(conn, target=12)
    rows = [(1, "git_commit", "Parser crashed on empty input"), (2, "shell_command", "./crashed-build.sh")]
    for seq, kind, title in rows:
        conn.execute(
            "INSERT INTO nodes(seq, id, project_id, kind, source, natural_key, ref, title, body, ts, created_at,"
            " updated_at, signal, provenance, content_hash) VALUES (?, ?, 'p', ?, 's', ?, ?, ?, '', 0, 0, 0, .5,"
            " 'x', 'h')",
            (seq, f"id{seq}", kind, f"k{seq}", f"r{seq}", title),
        )
        # as the store wrote them before: every kind but diffs in both indexes
        conn.execute(
            "INSERT INTO nodes_fts(rowid, title, body, words, notes) VALUES (?, ?, '', '', '')", (seq, title)
        )
        conn.execute("INSERT INTO nodes_stem(rowid, title, body, notes) VALUES (?, ?, '', '')", (seq, title))

    def stemmed(word: str) -> list[int]:
        return [r[0] for r in conn.execute("SELECT rowid FROM nodes_stem WHERE nodes_stem MATCH ?", (word,))]

    assert stemmed("crash") == [1, 2]
    assert migrations.migrate(conn, target=13) == [13]
    assert stemmed("crash") == [1]
    conn.execute("UPDATE nodes SET title = './crashing-build.sh' WHERE seq = 2")
    conn.execute("UPDATE nodes SET title = 'Parser crashes on empty input' WHERE seq = 1")
    assert stemmed("crash") == [1]
    exact = [r[0] for r in conn.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH 'crashing'")]
    assert exact == [2]  # the exact index still holds the command


def test_a_rebuild_leaves_whole_word_indexes_and_finds_everything_again(repo: Path) -> None:
    """A rebuild deleted every node through the FTS5 delete trigger (secure delete): a minute on a
    26,000-node store. It now empties the word indexes whole; they must come back whole and consistent."""
    commit(repo, "fix(cache): evict the oldest entry first", {"src/cache.py": "def evict():\n    pass\n"})
    commit(repo, "docs: explain eviction", {"README.md": "# Cache\n\n## Eviction\n\nOldest first.\n"})
    commit(repo, "feat: 中文 搜索 支持", {"src/zh.py": "X = '搜索'\n"})
    sync.sync(repo)
    before = {
        it.id
        for it in query.run(project.load(repo).open_store(readonly=True), "evict oldest", project="r").items
    }
    sync.sync(repo, rebuild=True)
    with project.load(repo).open_store() as store:
        for table in ("nodes_fts", "nodes_stem", "nodes_cjk"):
            store.conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        assert (
            store.conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'nodes_fts_ad'").fetchone()[0]
            == 1
        )
        after = {it.id for it in query.run(store, "evict oldest", project="r").items}
        assert after == before and after
        assert query.run(store, "搜索", project="r").items
    sync.sync(repo)  # an ordinary sync after it deletes through the trigger as before


def test_writing_a_nodes_text_unchanged_leaves_the_word_indexes_alone(repo: Path) -> None:
    """An update that names the indexed columns but writes what they held (notes derived again as they
    were, a meta-only change) rewrote the node in both word indexes: with secure-delete, 10-28 ms a node,
    14 s after a checkout and back on rust-lang/cargo. Only a change of the text rewrites it; a real change
    is still found by its new words and not by its old ones."""
    commit(repo, "feat: the ledger exporter", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    db = project.load(repo).db_path
    conn = connect(db)

    def index_rows() -> tuple[int, int]:
        return (
            conn.execute("SELECT count(*) FROM nodes_fts_data").fetchone()[0],
            conn.execute("SELECT count(*) FROM nodes_stem_data").fetchone()[0],
        )

    before = index_rows()
    with conn:
        conn.execute(
            "UPDATE nodes SET title = title, body = body, words = words, notes = notes, meta = meta"
            " WHERE kind = 'git_commit'"
        )
    assert index_rows() == before
    with conn:
        conn.execute("UPDATE nodes SET title = 'feat: the invoice exporter' WHERE kind = 'git_commit'")
    assert index_rows() != before
    seq = conn.execute("SELECT seq FROM nodes WHERE kind = 'git_commit'").fetchone()[0]

    def titled(word: str) -> bool:
        hits = conn.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", (f"title:{word}",))
        return seq in {r[0] for r in hits}

    assert titled("invoice") and not titled("ledger")
    conn.close()


def test_a_changelog_with_lone_cr_line_ends_or_a_nul_is_read_as_the_docs_source_reads_it(repo: Path) -> None:
    """HISTORY.txt saved with classic Mac line ends (CR alone) became one entry titled
    "HISTORY.txt: # History\\r\\r## 1.1.0\\r- Fix the wombat parser…", both releases merged; a NUL in
    CHANGES.md stayed in the entry and showed as "\\x00" in its title. The changelog source now reads a file
    as the docs source does (one helper): every line end as a newline, a NUL as U+FFFD."""
    fix = commit(repo, "parser: wombat (#7)", {"parser.py": "x = 1\n"})
    commit(
        repo,
        "release notes",
        {
            "HISTORY.txt": b"# History\r\r## 1.1.0\r\r- Fix the wombat parser (#7)\r\r## 1.0.0\r\r- First release\r",
            "CHANGES.md": b"# Changes\n\n## 2.0.0\n\n- The numbat\x00 exporter is faster\n",
        },
    )
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        entries = {n.title: n for n in store.iter_nodes("doc_section") if n.source == "changelog"}
        assert sorted(entries) == [
            "CHANGES.md — 2.0.0: The numbat\ufffd exporter is faster",
            "HISTORY.txt — 1.0.0: First release",
            "HISTORY.txt — 1.1.0: Fix the wombat parser (#7)",
        ], sorted(entries)
        wombat = entries["HISTORY.txt — 1.1.0: Fix the wombat parser (#7)"]
        assert wombat.ref == "HISTORY.txt#1.1.0" and "\r" not in wombat.body
        links = {b for _, b, rel in store.links_from([wombat.id]) if rel == "changelog"}
        assert node_id(proj.id, "git_commit", fix) in links


def test_a_prose_entry_is_not_linked_to_a_later_release_that_added_a_blank_line(repo: Path) -> None:
    """cJSON's "1.3.0 › Simplifications: After having unit tests ..." was linked to "Release 1.7.19", eight
    years later, and dated by it: the prose chunk's first line is the blank line under its heading, and the
    newest commit that added a blank line (any release) passed for the one that wrote the entry."""
    old = "# Changelog\n\n## 1.0.0\n\n### Simplifications\n\nAfter having unit tests, I refactored the parser.\n"
    old += "\n- Use strtod from the standard library\n"
    commit(repo, "init", {"pool.py": "x = 1\n"}, when=1_500_000_000)
    commit(repo, "Add the changelog", {"CHANGELOG.md": old}, when=1_500_100_000)
    new = old.replace("# Changelog\n\n", "# Changelog\n\n## 2.0.0\n\n- Faster printing\n\n")
    release = commit(repo, "Release 2.0.0", {"CHANGELOG.md": new}, when=1_700_000_000)
    sync.sync(repo, embed=False)
    proj = project.load(repo)
    with proj.open_store() as store:
        prose = next(n for n in store.iter_nodes("doc_section") if "After having" in n.body)
        linked = {b for _, b, rel in store.links_from([prose.id]) if rel == "changelog"}
        assert node_id(proj.id, "git_commit", release) not in linked
        assert linked == set()  # written by a commit touching only the notes: bookkeeping, no link
        assert prose.ts == 1_500_100_000 * 1000  # dated by the commit that wrote it
