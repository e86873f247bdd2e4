"""Bad or unusual repositories: sync must complete, lose nothing, and query must answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import commit, git, query_json, run_cli


def sync_json(repo: Path, *extra: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(run_cli("-C", str(repo), "sync", "--json", *extra).output)
    return data


def kinds(repo: Path) -> dict[str, int]:
    by_kind: dict[str, int] = json.loads(run_cli("-C", str(repo), "status", "--json").output)["by_kind"]
    return by_kind


@pytest.mark.slow
def test_empty_repository_then_first_commit(repo: Path) -> None:
    (repo / "NOTES.md").write_text("# Notes\n\nUntracked but indexed.\n", encoding="utf-8")
    sync_json(repo)
    assert kinds(repo).get("git_commit", 0) == 0
    assert kinds(repo).get("doc_section") == 1
    assert run_cli("-C", str(repo), "query", "anything").output.startswith("No memory matches")
    commit(repo, "feat: the very first commit", {"a.txt": "a\n"})
    sync_json(repo)
    assert kinds(repo)["git_commit"] == 1


@pytest.mark.slow
def test_detached_head(repo: Path) -> None:
    commit(repo, "feat: one", {"a.txt": "1\n"})
    commit(repo, "feat: two", {"a.txt": "2\n"})
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    sync_json(repo)
    assert kinds(repo)["git_commit"] == 1  # HEAD's history; "two" is on main and not walked from HEAD
    git(repo, "checkout", "-q", "main")
    sync_json(repo)
    assert kinds(repo)["git_commit"] == 2


def test_shallow_clone(repo: Path, tmp_path: Path) -> None:
    for i in range(6):
        commit(repo, f"feat: step {i}", {"a.txt": f"{i}\n"})
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(shallow))
    sync_json(shallow)
    assert kinds(shallow)["git_commit"] == 2
    assert query_json(shallow, "step 5")["items"]


@pytest.mark.slow
def test_two_clones_share_one_project_id_and_no_origin_uses_path(repo: Path, tmp_path: Path) -> None:
    commit(repo, "feat: shared", {"a.txt": "a\n"})
    ids = []
    for name in ("one", "two"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(repo), str(clone))
        git(
            clone,
            "remote",
            "set-url",
            "origin",
            "git@github.com:Acme/Widget.git" if name == "one" else "https://github.com/acme/widget/",
        )
        sync_json(clone)
        ids.append(json.loads(run_cli("-C", str(clone), "status", "--json").output)["project"])
        item = query_json(clone, "shared")["items"][0]
        ids.append(item["id"])
    assert ids[0] == ids[2] == "github.com/acme/widget"
    assert ids[1] == ids[3]  # node ids derive from the project id: the same in both clones
    sync_json(repo)
    assert json.loads(run_cli("-C", str(repo), "status", "--json").output)["project"] == str(repo)


def test_worktree(repo: Path, tmp_path: Path) -> None:
    commit(repo, "feat: base", {"a.txt": "a\n"})
    tree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tree))
    commit(tree, "fix: only on the topic branch", {"b.txt": "b\n"})
    sync_json(tree)
    assert (tree / ".nexusmem" / "memory.db").exists()
    assert [
        it["title"] for it in query_json(tree, "topic branch")["items"] if it["kind"] == "git_commit"
    ] == ["fix: only on the topic branch"]


def test_non_utf8_message_and_file_name(repo: Path) -> None:
    raw_name = os.fsdecode(b"caf\xe9-notes.txt")
    (repo / raw_name).write_bytes(b"caf\xe9\n")
    (repo / "msg.txt").write_bytes(b"fix: handle caf\xe9 encoding in latin-1\n\nBody \xff\xfe bytes.\n")
    git(repo, "add", "-A")
    git(repo, "-c", "i18n.commitEncoding=latin1", "commit", "-q", "-F", "msg.txt")
    summary = sync_json(repo)
    assert summary["added"]
    titles = [it["title"] for it in query_json(repo, "encoding latin")["items"]]
    assert any("encoding in latin-1" in t for t in titles)


@pytest.mark.slow
def test_binary_files_and_submodule(repo: Path, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    commit(sub, "feat: submodule inner commit", {"s.txt": "s\n"})
    commit(repo, "feat: add a logo", {"logo.png": bytes(range(256)) * 4, "a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    git(repo, "commit", "-q", "-m", "build: vendor the submodule")
    summary = sync_json(repo)
    assert summary["added"]
    refs = {it["ref"] for it in query_json(repo, "logo")["items"] if it["kind"] == "code_diff"}
    assert not any(r.endswith(":logo.png") for r in refs)
    assert not [
        it for it in query_json(repo, "submodule inner")["items"] if it["title"].startswith("feat: submodule")
    ]


@pytest.mark.slow
def test_large_commit_is_truncated_and_marked(repo: Path) -> None:
    lines = "".join(f"line {i} of a very large generated file with some words\n" for i in range(900_000))
    assert len(lines) > 50_000_000
    commit(repo, "feat: add a 50 MB data dump", {"dump.txt": lines})
    sync_json(repo)
    items = query_json(repo, "dump.txt data dump")["items"]
    diff = next(it for it in items if it["kind"] == "code_diff")
    assert diff["ref"].endswith(":dump.txt")
    import sqlean

    conn = sqlean.connect(str(repo / ".nexusmem" / "memory.db"))
    (body_len,) = conn.execute("SELECT length(body) FROM nodes WHERE kind = 'code_diff'").fetchone()
    conn.close()
    assert body_len < 25_000


def test_a_commit_with_no_message_is_shown_as_one(repo: Path) -> None:
    """`git commit --allow-empty-message -m ""`: its answer line ended at the tags, and each diff's title in
    a dangling dash."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    (repo / "quokka.txt").write_text("quokka\n", encoding="utf-8")
    git(repo, "add", "quokka.txt")
    git(repo, "commit", "-q", "--allow-empty-message", "-m", "")
    run_cli("-C", str(repo), "sync", "--no-embed")
    text = run_cli("-C", str(repo), "query", "quokka").output
    assert "(no commit message)" in text, text
    assert not any(
        line.rstrip().endswith(("]", "—")) for line in text.splitlines() if line.startswith("- ")
    ), text
    data = query_json(repo, "quokka")
    assert any(it["title"].startswith("quokka.txt @ ") and "—" not in it["title"] for it in data["items"]), (
        data
    )
