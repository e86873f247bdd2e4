"""Renamed files: each commit records where the files it renamed came from (meta `renames`), and the answers
about a file follow it back past a `git mv` as `git log --follow` does. Real git repositories, real SQLite,
the real sync, the answers asked through `nexusmem query`."""

from __future__ import annotations

import json
import time
from pathlib import Path

from nexusmem import project, sync
from nexusmem.store import migrations

from helpers import commit, git, query_json, run_cli

DAY = 86_400
NOW = int(time.time())


def renames_meta(repo: Path) -> dict[str, list[list[str]]]:
    """sha → meta `renames` of every stored commit that holds one."""
    with project.load(repo).open_store() as store:
        rows = store.conn.execute("SELECT ref, meta FROM nodes WHERE kind = 'git_commit'").fetchall()
    found = {str(ref): json.loads(meta).get("renames") for ref, meta in rows}
    return {ref: renames for ref, renames in found.items() if renames is not None}


def move(repo: Path, old: str, new: str, message: str, when: int, text: str | None = None) -> str:
    """`git mv OLD NEW` (then NEW written with TEXT, when given: a rename and an edit in one commit)."""
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", old, new)
    return commit(repo, message, {new: text} if text is not None else None, when=when)


def chain_history(repo: Path) -> dict[str, str]:
    """src/alpha.py → src/beta.py → lib/gamma.py (the second with an edit), commits under each name, and
    another file named src/alpha.py made after the first moved away: no part of gamma's history."""
    body = "".join(f"def helper_{i}():\n    return {i}\n\n" for i in range(12))
    shas = {
        "add": commit(repo, "Add the parser", {"src/alpha.py": body}, when=NOW - 50 * DAY),
        "tune": commit(repo, "Tune the parser", {"src/alpha.py": body + "LIMIT = 3\n"}, when=NOW - 40 * DAY),
    }
    shas["first_move"] = move(repo, "src/alpha.py", "src/beta.py", "Move the parser", NOW - 30 * DAY)
    shas["under_beta"] = commit(
        repo, "Cap the parser", {"src/beta.py": body + "LIMIT = 4\n"}, when=NOW - 25 * DAY
    )
    shas["second_move"] = move(
        repo, "src/beta.py", "lib/gamma.py", "Move it again", NOW - 20 * DAY, body + "LIMIT = 5\n"
    )
    shas["other_alpha"] = commit(repo, "A new alpha", {"src/alpha.py": "X = 1\n"}, when=NOW - 15 * DAY)
    shas["under_gamma"] = commit(
        repo, "Raise the cap", {"lib/gamma.py": body + "LIMIT = 6\n"}, when=NOW - 10 * DAY
    )
    return shas


def test_a_commit_records_the_files_it_renamed(repo: Path) -> None:
    """A rename's old path was only on the commit's Files line (its first twenty files, as text): the commit's
    meta keeps every rename (old, new), a rename with an edit too, and the store reads them by either path."""
    shas = chain_history(repo)
    sync.sync(repo, embed=False)
    assert renames_meta(repo) == {
        shas["first_move"]: [["src/alpha.py", "src/beta.py"]],
        shas["second_move"]: [["src/beta.py", "lib/gamma.py"]],
    }
    with project.load(repo).open_store() as store:
        assert store.renames_of(["src/beta.py"]) == [
            ("src/beta.py", "lib/gamma.py", shas["second_move"], (NOW - 20 * DAY) * 1000),
            ("src/alpha.py", "src/beta.py", shas["first_move"], (NOW - 30 * DAY) * 1000),
        ]
        assert store.renames_of(["README.md"]) == []


def test_what_changed_in_a_renamed_file_follows_it_back_through_its_renames(repo: Path) -> None:
    """ "What changed in gamma.py recently" listed the commits of lib/gamma.py alone (the two since its last
    move): its commits as src/beta.py and src/alpha.py are its history too, as `git log --follow` shows it,
    and the note names the old names. The later file that took the name src/alpha.py is another file."""
    shas = chain_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    followed = git(repo, "log", "--follow", "--format=%H", "--", "lib/gamma.py").split()
    history = [shas[k] for k in ("under_gamma", "second_move", "under_beta", "first_move", "tune", "add")]
    assert followed == history  # what git says
    found = query_json(repo, "what changed in gamma.py recently")
    assert [it["ref"] for it in found["items"]] == history, found["items"]
    note = (
        "first: the newest commits that changed lib/gamma.py (named src/beta.py before"
        f" {shas['second_move'][:10]}, src/alpha.py before {shas['first_move'][:10]}), newest first"
    )
    assert note in found["notes"], found["notes"]
    # In a window: the commits of that time, under whichever name the file had then.
    found = query_json(repo, "what changed in lib/gamma.py in the last 4 weeks")
    assert [it["ref"] for it in found["items"]] == history[:3], found["items"]
    # The old name asks about the path as `git log -- src/alpha.py` does: the new alpha's commits, the
    # rename that took the first one away, and that one's commits; the note says where it went.
    found = query_json(repo, "what changed in src/alpha.py recently")
    by_path = git(repo, "log", "--format=%H", "--", "src/alpha.py").split()
    assert by_path == [shas["other_alpha"], shas["first_move"], shas["tune"], shas["add"]]
    assert [it["ref"] for it in found["items"]] == by_path, found["items"]
    moved = (
        f"an earlier src/alpha.py was renamed to src/beta.py in {shas['first_move'][:10]}, then to lib/gamma.py"
        f" in {shas['second_move'][:10]}; this one was added in {shas['other_alpha'][:10]}"
    )
    assert moved in found["notes"], found["notes"]


def test_what_changed_in_a_file_renamed_since_starts_with_its_rename(repo: Path) -> None:
    """ "What changed in src/beta.py recently" (a file since renamed to lib/gamma.py) started at the commit
    before the rename and never said where the file went; `git log -- src/beta.py` starts with the rename."""
    shas = chain_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in src/beta.py recently")
    history = [shas[k] for k in ("second_move", "under_beta", "first_move", "tune", "add")]
    assert [it["ref"] for it in found["items"]] == history, found["items"]
    assert f"src/beta.py is now lib/gamma.py (renamed in {shas['second_move'][:10]})" in found["notes"]


def plain_chain(repo: Path) -> dict[str, str]:
    """src/alpha.py → src/beta.py → lib/gamma.py, with an edit under each name and no later src/alpha.py."""
    shas = {
        "add": commit(repo, "Add the parser", {"src/alpha.py": "X = 1\n"}, when=NOW - 50 * DAY),
        "tune": commit(repo, "Tune the parser", {"src/alpha.py": "X = 2\n"}, when=NOW - 40 * DAY),
    }
    shas["first_move"] = move(repo, "src/alpha.py", "src/beta.py", "Move the parser", NOW - 30 * DAY)
    shas["under_beta"] = commit(repo, "Cap the parser", {"src/beta.py": "X = 3\n"}, when=NOW - 25 * DAY)
    shas["second_move"] = move(repo, "src/beta.py", "lib/gamma.py", "Move it again", NOW - 20 * DAY)
    shas["under_gamma"] = commit(repo, "Raise the cap", {"lib/gamma.py": "X = 4\n"}, when=NOW - 10 * DAY)
    return shas


def test_the_note_of_a_file_renamed_twice_names_each_rename_once(repo: Path) -> None:
    """ "What changed in src/alpha.py" said "src/alpha.py is now lib/gamma.py (renamed to src/beta.py in
    91c265226c (now lib/gamma.py))": the new name twice, and the second rename not at all."""
    shas = plain_chain(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in src/alpha.py")
    note = (
        f"src/alpha.py is now lib/gamma.py (renamed to src/beta.py in {shas['first_move'][:10]}, then to"
        f" lib/gamma.py in {shas['second_move'][:10]})"
    )
    assert note in found["notes"], found["notes"]


def test_a_file_renamed_away_was_not_removed(repo: Path) -> None:
    """ "When was src/alpha.py removed" said "last change that holds alpha.py: <an edit>", with the rename
    second and no word of where the file went; "is src/alpha.py still in the code" said "no: alpha.py is not
    in the code any more", though it lives on as lib/gamma.py. A renamed path was not removed: the note says
    where it went, and the rename that took it away comes first."""
    shas = plain_chain(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    renamed = (
        f"renamed to src/beta.py in {shas['first_move'][:10]}, then to lib/gamma.py in"
        f" {shas['second_move'][:10]}"
    )
    found = query_json(repo, "when was src/alpha.py removed")
    assert (
        f"src/alpha.py was not removed: it was {renamed}, and is still in the code as lib/gamma.py"
        in found["notes"]
    ), found["notes"]
    assert not any(n.startswith("last change that holds") for n in found["notes"]), found["notes"]
    assert found["items"][0]["ref"] == shas["first_move"], found["items"]
    found = query_json(repo, "is src/alpha.py still in the code")
    assert f"yes: src/alpha.py is still in the code as lib/gamma.py ({renamed})" in found["notes"], found[
        "notes"
    ]
    assert not any("not in the code any more" in n for n in found["notes"]), found["notes"]


def test_a_bare_name_shared_with_the_files_former_name_is_one_file(repo: Path) -> None:
    """ "What changed in gamma.py lately" of lib/gamma.py, once pkg/gamma.py, said "gamma.py also names
    pkg/gamma.py: ask with the full path for another": that is the same file's former name."""
    commit(repo, "Add gamma", {"pkg/gamma.py": "X = 1\n"}, when=NOW - 9 * DAY)
    (repo / "lib").mkdir()
    moved = move(repo, "pkg/gamma.py", "lib/gamma.py", "Move gamma", NOW - 8 * DAY)
    commit(repo, "Tune gamma", {"lib/gamma.py": "X = 2\n"}, when=NOW - 7 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in gamma.py lately")
    assert (
        f"first: the newest commits that changed lib/gamma.py (named pkg/gamma.py before {moved[:10]}), newest first"
        in found["notes"]
    ), found["notes"]


def test_when_was_a_name_removed_after_its_file_was_renamed(repo: Path) -> None:
    """ "When was kestrel_budget removed?" said it was still in the code at src/old_name.py: the newest diff of
    that path that holds it kept it, and the file had moved (a pure rename has no diff) before a commit
    removed it under its new name. A path renamed since is read under its new name; a rename with an edit
    that kept the name leaves it in the code, under the new name."""
    commit(
        repo,
        "Add the parser",
        {"src/old_name.py": "def parse_alpha():\n    return 1\n"},
        when=NOW - 9 * DAY,
    )
    commit(
        repo,
        "Budget the parser",
        {"src/old_name.py": "def parse_alpha():\n    return 2\n\ndef kestrel_budget():\n    return 3\n"},
        when=NOW - 8 * DAY,
    )
    commit(repo, "Add the heron", {"src/heron.py": "def heron_span():\n    return 1\n"}, when=NOW - 7 * DAY)
    move(repo, "src/old_name.py", "src/new_name.py", "Move the module", NOW - 6 * DAY)
    removed = commit(
        repo,
        "Drop the helper",
        {"src/new_name.py": "def parse_alpha():\n    return 2\n"},
        when=NOW - 5 * DAY,
    )
    move(
        repo,
        "src/heron.py",
        "lib/heron.py",
        "Move the heron",
        NOW - 4 * DAY,
        "def heron_span():\n    return 1\n\n\ndef heron_width():\n    return 2\n",
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "when was kestrel_budget removed")
    assert f"last change that holds kestrel_budget: {removed[:10]}" in found["notes"], found["notes"]
    assert not any("still in the code" in note for note in found["notes"]), found["notes"]
    found = query_json(repo, "when was heron_span removed")
    assert any(
        note.startswith("heron_span is still in the code (lib/heron.py)") for note in found["notes"]
    ), found["notes"]


def test_an_existing_store_reads_its_renames_once_on_the_next_sync(repo: Path) -> None:
    """A store the release before wrote holds no commit's renames: the upgrade makes its next sync walk the
    history again, once, saying so (ids and first-recorded times kept), after which its answers follow the
    renames. A store none of whose commits lists a rename or is cut has nothing to read again."""
    commit(repo, "init", {"README.md": "# x\n"}, when=NOW - 9 * DAY)
    project.init(repo)
    sync.sync(repo, embed=False)
    with project.load(repo).open_store() as store:
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 18")
        store.conn.commit()
    lines: list[str] = []
    summary = sync.sync(repo, embed=False, log=lines.append)
    assert not any("renamed" in line for line in lines), lines
    assert next(s for s in summary.sources if s.name == "git").noop

    shas = chain_history(repo)
    sync.sync(repo, embed=False)
    with project.load(repo).open_store() as store:  # as the release before wrote it
        store.conn.execute(
            "UPDATE nodes SET meta = json_remove(meta, '$.renames'), content_hash = 'before'"
            " WHERE kind = 'git_commit' AND json_type(meta, '$.renames') = 'array'"
        )
        store.conn.execute("DROP INDEX nodes_renames")
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 18")
        store.conn.commit()
        times = {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")}
    assert renames_meta(repo) == {}
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append)
    assert any(
        "reading the 8 commit(s) already in memory again for the files they renamed (once, after an upgrade)"
        in line
        for line in lines
    ), lines
    assert set(renames_meta(repo)) == {shas["first_move"], shas["second_move"]}
    with project.load(repo).open_store() as store:
        assert store.schema_version() == migrations.LATEST
        now = {r[0]: r[1] for r in store.conn.execute("SELECT id, created_at FROM nodes")}
    assert {i: now[i] for i in times} == times
    found = query_json(repo, "what changed in gamma.py recently")
    assert [it["ref"] for it in found["items"]][-1] == shas["add"], found["items"]
    lines.clear()
    sync.sync(repo, embed=False, log=lines.append)  # once only
    assert not any("renamed" in line for line in lines), lines
