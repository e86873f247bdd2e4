"""A repository moved with `mv`: its memory, the commands run before the move and its own config settings
follow it. A repository with no remote is known by its path, so a move changes its project id."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from nexusmem import project

from helpers import commit, git, init_repo, query_json, run_cli, run_script
from helpers.shell import typed_in_bash


def test_a_moved_repository_keeps_its_verdicts_and_writes_nothing_twice(repo: Path, tmp_path: Path) -> None:
    """`mv p p2; nexusmem sync`: the nodes recorded under the old path's id go by the new one, so a verdict
    stays on its commit (through a rebuild too), `show` finds the commit by its new id, and a doc edited after
    the move leaves no stale copy of its section beside the new one. The sync after the move said to run
    `sync --rebuild`, which then dropped every verdict given before the move."""
    commit(repo, "commit 1 frobnicate", {"README.md": "# Tool\n\n## Usage\n\nRun the frobnicator.\n"})
    commit(repo, "commit 2 frobnicate", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    second = next(
        it for it in query_json(repo, "frobnicate")["items"] if it["title"] == "commit 2 frobnicate"
    )
    run_cli("-C", str(repo), "review", second["id"], "--verify")
    with project.load(repo).open_store(readonly=True) as store:
        before = store.node_count()

    moved = tmp_path / "elsewhere" / "p2"
    moved.parent.mkdir()
    os.rename(repo, moved)
    out = run_cli("-C", str(moved), "sync", "--no-embed").output
    assert "this repository's id changed" in out and f"→ {moved.resolve()})" in out, out
    assert "now go by the new id, with their verdicts" in out
    assert "--rebuild" not in out
    assert "id changed" not in run_cli("-C", str(moved), "sync", "--no-embed").output  # said once

    def verdict() -> tuple[str, str]:
        items = query_json(moved, "frobnicate")["items"]
        found = next(it for it in items if it["title"] == "commit 2 frobnicate")
        return found["id"], found["trust"]

    new_id, trust = verdict()
    assert trust == "verified" and new_id != second["id"]
    assert "commit 2 frobnicate" in run_cli("-C", str(moved), "show", new_id).output
    (moved / "README.md").write_text("# Tool\n\n## Usage\n\nRun the frobnicator twice.\n", encoding="utf-8")
    run_cli("-C", str(moved), "sync", "--no-embed")
    with project.load(moved).open_store(readonly=True) as store:
        assert store.node_count() == before
        assert store.count_project(project.load(moved).id) == before
        sections = [n.body for n in store.iter_nodes("doc_section") if "frobnicator" in n.body]
    assert len(sections) == 1 and "twice" in sections[0], sections
    run_cli("-C", str(moved), "sync", "--rebuild", "--no-embed")
    assert verdict() == (new_id, "verified")


@pytest.mark.parametrize("remote", [False, True], ids=["no-remote", "with-a-remote"])
def test_commands_run_before_a_move_and_not_synced_yet_are_the_moved_repositorys(
    repo: Path, tmp_path: Path, remote: bool
) -> None:
    """A command typed at a real bash with the prompt hook, then `mv` of the repository before any sync: the
    hook log names the old folder, and the sync after the move passed the line by ("shell unchanged"), its
    command lost. A folder this memory was synced at that is gone now is the repository's, moved: its commands
    are read as this one's (a rebuild reads them back too). A copy's old folder is still there: not taken."""
    if remote:
        git(repo, "remote", "add", "origin", "https://example.com/team/tool.git")
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    typed_in_bash(repo, "echo ran-before-move-kappa; false")
    assert "ran-before-move-kappa" in (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").read_text()
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)  # its folder stays: the copy does not take its commands
    run_cli("-C", str(copy), "sync", "--no-embed")
    assert not query_json(copy, "ran-before-move-kappa")["items"]

    moved = tmp_path / "elsewhere" / "m2"
    moved.parent.mkdir()
    os.rename(repo, moved)
    run_cli("-C", str(moved), "sync", "--no-embed")
    found = [
        it for it in query_json(moved, "ran-before-move-kappa")["items"] if it["kind"] == "shell_command"
    ]
    assert [it["title"] for it in found] == ["echo ran-before-move-kappa; false (exit 1)"], found
    rebuilt = run_cli("-C", str(moved), "sync", "--rebuild", "--no-embed").output
    assert "the rebuild read back" not in rebuilt, rebuilt
    assert len(query_json(moved, "ran-before-move-kappa")["items"]) == 1
    run_cli(
        "-C", str(copy), "sync", "--rebuild", "--no-embed"
    )  # the old folder is gone: still not the copy's
    assert not query_json(copy, "ran-before-move-kappa")["items"]


def test_a_moved_repository_takes_no_command_of_one_made_at_its_old_path_since(
    repo: Path, tmp_path: Path
) -> None:
    """`mv p q`, then another repository made at p, a command run there, and p deleted: q's next sync read
    that command as its own (p, a folder it was synced at, is gone). A command logged at a folder this memory
    was synced at is its own only if logged before the memory left it (the first sync at the next folder)."""
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    typed_in_bash(repo, "echo ran-before-move-lambda")
    moved = tmp_path / "elsewhere" / "q"
    moved.parent.mkdir()
    os.rename(repo, moved)
    run_cli("-C", str(moved), "sync", "--no-embed")

    init_repo(repo)  # another repository, made at the old path
    commit(repo, "second", {"b.txt": "b\n"})
    typed_in_bash(repo, "echo ran-in-the-second-mu")
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert "echo ran-in-the-second-mu (exit 0)" in [
        it["title"] for it in query_json(repo, "ran echo")["items"]
    ]
    shutil.rmtree(repo)
    for how in ((), ("--rebuild",)):
        run_cli("-C", str(moved), "sync", "--no-embed", *how)
        commands = [
            it["title"] for it in query_json(moved, "ran echo")["items"] if it["kind"] == "shell_command"
        ]
        assert commands == ["echo ran-before-move-lambda (exit 0)"], (how, commands)


def test_the_first_move_after_an_upgrade_keeps_the_commands_run_before_it(repo: Path, tmp_path: Path) -> None:
    """A memory built by a release that recorded neither the project id nor the folders it was synced at
    (before c7a8980) knows its old folder only by its nodes' own project id, the path of a repository with no
    remote: the first move after the upgrade lost the commands run there and not synced yet, and the sync
    said the id changed from "an older id"."""
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store, store.transaction():
        for key in ("project.id", "project.roots"):  # as that release left it
            store.delete_meta(key)
    typed_in_bash(repo, "echo ran-before-upgrade-nu")
    moved = tmp_path / "elsewhere" / "q"
    moved.parent.mkdir()
    os.rename(repo, moved)
    out = run_cli("-C", str(moved), "sync", "--no-embed").output
    assert f"given a remote: {repo} → {moved}" in out, out
    commands = [it["title"] for it in query_json(moved, "ran echo")["items"] if it["kind"] == "shell_command"]
    assert commands == ["echo ran-before-upgrade-nu (exit 0)"], commands


def test_the_post_commit_sync_logs_that_the_project_id_changed(repo: Path) -> None:
    """When the id changed in a background sync (the post-commit hook's `sync --auto`: a remote added, the
    repository moved), the note that every node now goes by the new id went nowhere: auto-sync.log, where the
    hook sends its output, said only "sync run 1 done"."""
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    git(repo, "remote", "add", "origin", "git@github.com:acme/widget.git")
    commit(repo, "second", {"a.txt": "b\n"})
    proc = run_script("sync", "--auto", cwd=repo)  # what the hook appends to .nexusmem/auto-sync.log
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    said = [line for line in lines if "this repository's id changed" in line]
    assert len(said) == 1 and f"{repo} → github.com/acme/widget" in said[0], lines
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* pid \d+: git: ", said[0]), said
    assert "sync run 1 done" in lines[-1], lines


def test_an_id_saved_before_the_project_id_changed_says_why_it_names_nothing(repo: Path) -> None:
    """Node ids derive from the project id: after a remote was added (or the repository moved), `show` and
    `review` of an id the user had saved said only "no node with id …", as for a mistyped one."""
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    saved = json.loads(run_cli("-C", str(repo), "show", "HEAD", "--json").output)["id"]
    nobody = "0123456789abcdef01234567"
    assert "ids changed" not in run_cli("-C", str(repo), "show", nobody, ok=False).output
    git(repo, "remote", "add", "origin", "git@github.com:acme/widget.git")
    run_cli("-C", str(repo), "sync", "--no-embed")
    for args in (("show", saved), ("review", saved, "--verify")):
        result = run_cli("-C", str(repo), *args, ok=False)
        assert result.exit_code == 1, result.output
        said = " ".join(result.output.split())
        assert f"no node with id '{saved}'" in said, said
        assert "node ids changed on" in said and "(now github.com/acme/widget)" in said, said
        assert "`nexusmem query`" in said, said


def test_the_note_that_the_id_changed_never_shows_a_token_the_old_id_held(repo: Path) -> None:
    """An origin URL with a Google API key in its path: the release before recorded it lower-cased, which the
    (case-sensitive) redaction rules no longer see, so the sync's note, printed and in auto-sync.log where the
    post-commit hook sends it, wrote `host.example/aizasy…/repo` to the screen and to disk."""
    key = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
    git(repo, "remote", "add", "origin", f"https://host.example/{key}/repo.git")
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    old = f"host.example/{key}/repo".lower()
    for how in ("sync", "sync --auto"):
        with project.load(repo).open_store() as store, store.transaction():  # as the release before left it
            store.rekey_project(old)
            store.set_meta("project.id", old)
        if how == "sync":
            said = run_cli("-C", str(repo), "sync", "--no-embed").output
        else:
            commit(repo, "second", {"a.txt": "b\n"})
            proc = run_script("sync", "--auto", cwd=repo)  # what the hook appends to .nexusmem/auto-sync.log
            assert proc.returncode == 0, proc.stderr
            said = proc.stdout
        assert "previous id, which held a credential of the origin URL, to host.example/«redacted:" in said, (
            said
        )
        assert key.lower() not in said.lower()


def test_the_note_names_the_old_id_of_another_remote(repo: Path) -> None:
    """A different remote (not the same one with a credential cut away): the old id is worth naming."""
    git(repo, "remote", "add", "origin", "git@github.com:acme/old.git")
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    git(repo, "remote", "set-url", "origin", "git@github.com:acme/new.git")
    said = run_cli("-C", str(repo), "sync", "--no-embed").output
    assert "given a remote: github.com/acme/old → github.com/acme/new)" in said, said


def _registered() -> set[str]:
    from nexusmem import registry

    return {str(entry["root"]) for entry in registry.load()}


def _registry_problems(where: Path) -> list[str]:
    doctor = run_cli("-C", str(where), "doctor", ok=False).stdout
    return [line for line in doctor.splitlines() if line.startswith("PROBLEM") and "registry" in line]


@pytest.mark.parametrize("via", ["sync", "hook"])
def test_a_moved_repository_leaves_no_registry_entry_at_its_old_path(
    repo: Path, tmp_path: Path, via: str
) -> None:
    """`mv repo repo2; cd repo2; nexusmem sync` logged that the id changed, but projects.json kept the old
    path: `projects` listed it as MISSING and doctor reported a registry PROBLEM until `projects --prune`.
    The sync that finds its memory moved (the same memory.db, at a new path) now takes the old path's entry
    out as it registers the new one. A `cp -r` copy is another project: its original keeps its entry, and
    so does the copy when the original moves."""
    repo, tmp_path = repo.resolve(), tmp_path.resolve()  # as the memory names them (macOS: /private/var)
    commit(repo, "first", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    run_cli("-C", str(copy), "sync", "--no-embed")
    assert _registered() == {str(repo), str(copy)}

    moved = tmp_path / "copy3"
    os.rename(copy, moved)
    if via == "sync":
        out = run_cli("-C", str(moved), "sync", "--no-embed").output
        assert f"{copy} → {moved}" in out, out
    else:  # the post-commit hook's background sync
        proc = run_script("sync", "--auto", cwd=moved)
        assert proc.returncode == 0 and f"{copy} → {moved}" in proc.stdout, proc.stdout + proc.stderr
    assert _registered() == {str(repo), str(moved)}
    assert _registry_problems(moved) == []
    assert "MISSING" not in run_cli("projects").output

    # The original moved too: the copy (a path that is still there) keeps its entry.
    elsewhere = tmp_path / "repo2"
    os.rename(repo, elsewhere)
    run_cli("-C", str(elsewhere), "sync", "--no-embed")
    assert _registered() == {str(elsewhere), str(moved)}
    assert _registry_problems(elsewhere) == []
