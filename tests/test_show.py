"""`nexusmem show ID` on a real synced repository: full id, prefix, ambiguous prefix, unknown id, --json."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem import project
from nexusmem.show import MIN_PREFIX

from helpers import commit, git, node, query_json, run_cli, run_script, store_nodes


def synced(repo: Path) -> dict[str, str]:
    """Sync a repository with one fix commit; returns the commit's query item."""
    commit(repo, "chore: start", {"src/cache.py": "TTL = 10\n"})
    commit(repo, "fix(cache): expire entries after 60 s, not 10", {"src/cache.py": "TTL = 60\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    items = query_json(repo, "expire cache entries")["items"]
    return next(it for it in items if it["kind"] == "git_commit" and "expire" in it["title"])


def test_show_expands_one_item_by_id_or_prefix(repo: Path) -> None:
    item = synced(repo)
    out = run_cli("-C", str(repo), "show", item["id"]).output
    lines = out.splitlines()
    assert lines[0] == "fix(cache): expire entries after 60 s, not 10"
    assert lines[1] == f"id {item['id']}  git_commit  [observed] [candidate]"
    assert lines[2].startswith("when 20") and "(recorded 20" in lines[2]
    assert lines[3] == f"ref {item['ref']}"
    assert "files src/cache.py" in lines

    full = json.loads(run_cli("-C", str(repo), "show", "--json", item["id"]).output)
    assert full["id"] == item["id"] and full["ref"] == item["ref"] and full["ts"] == item["ts"]
    assert full["files"] == ["src/cache.py"] and full["project"] == repo.name
    assert full["provenance"] == "observed" and full["trust"] == "candidate"
    assert set(full) == {
        "id", "kind", "ts", "created_at", "title", "provenance", "trust", "ref", "project", "source",
        "signal", "superseded", "superseded_by", "body", "files", "links", "linked_by", "linked_by_count", "meta", "diffs",
    }  # fmt: skip

    prefix = item["id"][:MIN_PREFIX].upper()  # case and blanks do not matter
    assert json.loads(run_cli("-C", str(repo), "show", "--json", f" {prefix} ").output) == full
    # The diff of that commit is its own item, with the patch as its body.
    diff = next(it for it in query_json(repo, "TTL cache.py")["items"] if it["kind"] == "code_diff")
    patch = json.loads(run_cli("-C", str(repo), "show", "--json", diff["id"]).output)
    assert "+TTL = 60" in patch["body"] and patch["kind"] == "code_diff"
    # A commit's item names its diffs' ids; the sha an answer shows beside a commit finds the commit.
    assert full["diffs"] == [{"id": diff["id"], "path": "src/cache.py"}]
    assert f"diff {diff['id']}  src/cache.py" in lines
    for sha in (item["ref"], item["ref"][:7]):
        assert json.loads(run_cli("-C", str(repo), "show", "--json", sha).output)["id"] == item["id"]


def test_show_errors_name_the_problem(repo: Path) -> None:
    item = synced(repo)
    # Two ids sharing their first 8 characters: what a large store eventually holds.
    other = "0" if item["id"][8] != "0" else "1"
    twin_id = item["id"][:8] + other * 16
    proj = project.load(repo)
    with proj.open_store() as store:
        store_nodes(store, [node("doc_section", text="Cache notes twin", project=proj.id, id=twin_id)])

    ambiguous = run_cli("-C", str(repo), "show", item["id"][:8], ok=False)
    assert ambiguous.exit_code == 1
    assert f"id prefix '{item['id'][:8]}' is ambiguous" in ambiguous.output
    assert (
        item["id"] in ambiguous.output
        and twin_id in ambiguous.output
        and "Cache notes twin" in ambiguous.output
    )
    assert json.loads(run_cli("-C", str(repo), "show", "--json", item["id"][:9]).output)["id"] == item["id"]

    unknown = run_cli("-C", str(repo), "show", "ffffffffffffff", ok=False)
    assert unknown.exit_code == 1 and "no node with id 'ffffffffffffff'" in unknown.output
    short = run_cli("-C", str(repo), "show", item["id"][: MIN_PREFIX - 1], ok=False)
    assert short.exit_code == 1 and f"at least {MIN_PREFIX} characters" in short.output
    assert run_cli("-C", str(repo), "show", ok=False).exit_code == 2  # usage: the id is required
    pasted = run_cli("-C", str(repo), "show", "f" * 100_000, ok=False)
    assert pasted.exit_code == 1 and "100,000 characters) is no id" in pasted.output
    assert len(pasted.output) < 300  # not echoed whole (an agent reads the error back into its context)


def test_a_short_sha_another_ids_start_shares_is_ambiguous_not_the_other_node(repo: Path) -> None:
    """On cargo, `show f32f72f` (the sha an answer printed beside "Fix missing import") opened another commit
    whose node id happened to start with those characters, with exit 0."""
    item = synced(repo)
    short = item["ref"][:7]
    twin_id = short + "0" * (24 - len(short))
    proj = project.load(repo)
    with proj.open_store() as store:
        store_nodes(store, [node("doc_section", text="Unrelated twin", project=proj.id, id=twin_id)])
    shown = run_cli("-C", str(repo), "show", short, ok=False)
    assert shown.exit_code == 1 and f"id prefix '{short}' is ambiguous" in shown.output
    assert f"{item['id']} (commit {item['ref'][:12]})" in shown.output and twin_id in shown.output
    # The whole sha is no node's id prefix: it finds its commit.
    assert json.loads(run_cli("-C", str(repo), "show", "--json", item["ref"]).output)["id"] == item["id"]


def test_show_as_the_installed_script_outside_memory(repo: Path) -> None:
    commit(repo, "chore: start")
    done = run_script("show", "abcdef", cwd=repo)
    assert done.returncode == 1 and "nexusmem sync" in done.stderr and "Traceback" not in done.stderr


def test_show_keeps_a_file_name_with_a_newline_on_its_line(repo: Path) -> None:
    commit(repo, "feat: two files", {"weird\nname.py": "x = 1\n", "plain.py": "y = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    [item] = [it for it in query_json(repo, "two files")["items"] if it["kind"] == "git_commit"]
    out = run_cli("-C", str(repo), "show", item["id"]).output
    [files] = [line for line in out.splitlines() if line.startswith("files ")]
    assert files == "files plain.py, weird\\nname.py", out


def test_a_commit_of_thousands_of_files_names_fifty_and_counts_the_rest(repo: Path) -> None:
    """`show` (and MCP get_memory) listed every file of a commit in its header: one commit of 10,302 files
    made a 233,000-character answer. The body's Files line was already capped; the header is now too."""
    commit(
        repo,
        "chore: vendor the icon set",
        {f"icons/icon{n:04d}.svg": f"<svg>{n}</svg>\n" for n in range(400)},
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    [item] = [it for it in query_json(repo, "vendor the icon set")["items"] if it["kind"] == "git_commit"]
    out = run_cli("-C", str(repo), "show", item["id"]).output
    [files] = [line for line in out.splitlines() if line.startswith("files ")]
    assert files.count(".svg") == 50 and "… and 350 more (`nexusmem show --json` lists them all)" in files
    assert len(json.loads(run_cli("-C", str(repo), "show", "--json", item["id"]).output)["files"]) == 400


def test_a_fix_linked_from_hundreds_of_failures_lists_the_newest_fifty(repo: Path) -> None:
    """A fix linked from every failing run before it listed them all in `linked_by`, in no useful order:
    3,000 failing `pytest test_calc.py` runs and one pass made get_memory's answer 300,662 characters
    (`show --json` 384 KB). Now the 50 whose run is newest, newest first, and `linked_by_count`."""
    from nexusmem import mcp_server

    from helpers import write_commands

    commit(repo, "test: calc", {"test_calc.py": "def test_add():\n    assert 1 + 1 == 3\n"})
    start = 1_700_000_000_000
    failures = [(start + n * 1000, "pytest test_calc.py", 1) for n in range(200)]
    write_commands(repo, [*failures, (start + 200 * 1000, "pytest test_calc.py", 0)])
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    with project.load(repo).open_store(readonly=True) as store:
        ts = {n.id: n.ts for n in store.iter_nodes("shell_command")}
        [fix] = [n.id for n in store.iter_nodes("shell_command") if n.title.endswith("(exit 0)")]

    full = json.loads(run_cli("-C", str(repo), "show", "--json", fix).output)
    assert full["linked_by_count"] == 200, full["linked_by_count"]
    shown = [ts[link["from"]] for link in full["linked_by"]]
    newest = sorted((t for t, _, _ in failures), reverse=True)[:50]
    assert shown == newest, shown
    out = run_cli("-C", str(repo), "show", fix).output
    assert out.count("linked from ") == 50 and "… and 150 older links arriving" in out, out
    answer = mcp_server.run_get(str(repo), fix)
    assert answer.structured_content is not None
    assert len(answer.structured_content["linked_by"]) == 50
    assert answer.structured_content["linked_by_count"] == 200
    assert len(json.dumps(answer.structured_content)) < 20_000


def test_show_of_a_tag_head_never_reached_says_no_sync_will_add_it(repo: Path) -> None:
    """`nexusmem show 0.13.2`, a tag on a branch HEAD never reached (bottle's `origin/release-0.13`), said
    "which memory does not hold yet: run `nexusmem sync`", and a sync changed nothing: memory holds the
    commits HEAD reaches. It says so now; checking out a branch that reaches it, then syncing, adds it."""
    synced(repo)
    git(repo, "checkout", "-q", "-b", "release-0.13")
    backport = commit(repo, "fix(cache): backport the 60 s expiry", {"src/cache.py": "TTL = 60  # 0.13\n"})
    git(repo, "tag", "0.13.2")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "release-0.13")  # left on the tag alone, as a fetched release branch is
    for _ in range(2):  # a sync does not change it
        out = run_cli("-C", str(repo), "show", "0.13.2", ok=False).output
        assert f"'0.13.2' is commit {backport[:12]}, which is not in HEAD's history" in out, out
        assert "`nexusmem sync` will not add it" in out and "does not hold yet" not in out, out
        run_cli("-C", str(repo), "sync", "--no-embed")
    git(repo, "checkout", "-q", "0.13.2")
    run_cli("-C", str(repo), "sync", "--no-embed")
    shown = json.loads(run_cli("-C", str(repo), "show", "--json", "0.13.2").output)
    assert shown["title"] == "fix(cache): backport the 60 s expiry", shown


def test_show_opens_the_commit_a_git_revision_names(repo: Path) -> None:
    """`nexusmem show HEAD` said "'HEAD' is too short for an id prefix": a branch, a tag, HEAD or `HEAD~1`
    names the commit git resolves it to, as memory holds it; one memory does not hold yet says to sync;
    what git cannot resolve keeps the id error (an option-like text is never handed to git as one)."""
    item = synced(repo)
    git(repo, "tag", "v1.0")
    for rev in ("HEAD", "main", "v1.0"):
        shown = json.loads(run_cli("-C", str(repo), "show", "--json", rev).output)
        assert shown["id"] == item["id"], rev
    assert json.loads(run_cli("-C", str(repo), "show", "--json", "HEAD~1").output)["title"] == "chore: start"
    later = commit(repo, "feat: not synced yet", {"b.txt": "b\n"})
    out = run_cli("-C", str(repo), "show", "HEAD", ok=False).output
    assert f"'HEAD' is commit {later[:12]}, which memory does not hold yet" in out
    assert "too short" in run_cli("-C", str(repo), "show", "abc", ok=False).output
    # A name git does not know (`show trunk` with no such branch) is no id either: not "too short for a prefix".
    missing = run_cli("-C", str(repo), "show", "trunk", ok=False)
    assert missing.exit_code == 1 and "nor a git revision of that name" in missing.output, missing.output
    assert "no node with id" in run_cli("-C", str(repo), "show", "--", "--output=x", ok=False).output


def test_show_of_a_sha_memory_lacks_says_why_as_a_revision_does(repo: Path, tmp_path: Path) -> None:
    """`show <sha>` of a commit made without a sync said "no node with id …, nor a commit of that sha" while
    `show HEAD` said "run nexusmem sync": a sha (full or short) that memory does not hold is resolved through
    git on that error path, and says the same (or "not in HEAD's history" for another branch's commit), in
    `show` and MCP get_memory alike. A hex text that git does not know keeps the id error."""
    import anyio

    from helpers.mcp import mcp_session

    synced(repo)
    later = commit(repo, "feat: not synced yet", {"b.txt": "b\n"})
    git(repo, "checkout", "-q", "-b", "side")
    aside = commit(repo, "feat: on a side branch", {"c.txt": "c\n"})
    git(repo, "checkout", "-q", "main")
    for ref in (later, later[:7]):
        out = run_cli("-C", str(repo), "show", ref, ok=False).output
        assert (
            f"{ref!r} is commit {later[:12]}, which memory does not hold yet: run `nexusmem sync`" in out
        ), out
    out = run_cli("-C", str(repo), "show", aside[:10], ok=False).output
    assert f"is commit {aside[:12]}, which is not in HEAD's history" in out, out
    out = run_cli("-C", str(repo), "show", "abcdef1234", ok=False).output
    assert "no node with id 'abcdef1234'" in out, out

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            got = await s.call_tool("get_memory", {"projectRoot": str(repo), "id": later[:8]})
            assert got.is_error
            text = got.content[0].text  # type: ignore[union-attr]
            assert f"is commit {later[:12]}, which memory does not hold yet" in text, text

    anyio.run(main)


def test_show_of_a_forgotten_commit_says_forget_took_it_out(repo: Path) -> None:
    """After `forget VALUE --yes`, `show <sha>` of the commit that held the value said "no node with id …,
    nor a commit of that sha" (then, once a sha was resolved through git, "run nexusmem sync", which never
    brings it back): it names the deny-list entry and says no sync restores it. A commit memory merely lacks
    still says to sync."""
    secret = "Zebra-Orchid-4471-Kestrel"
    commit(repo, "chore: start", {"a.txt": "a\n"})
    held = commit(repo, f"ops: rotate the staging login ({secret})", {"b.txt": "b\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", secret, "--yes")
    later = commit(repo, "feat: not synced yet", {"c.txt": "c\n"})
    for ref in (held, held[:10]):
        out = run_cli("-C", str(repo), "show", ref, ok=False).output
        assert f"is commit {held[:12]}, which `nexusmem forget` took out of memory" in out, out
        assert "no sync brings it back" in out and secret not in out, out
    out = run_cli("-C", str(repo), "show", later[:10], ok=False).output
    assert f"is commit {later[:12]}, which memory does not hold yet: run `nexusmem sync`" in out, out


def test_who_added_a_name_is_answered_by_the_commits_author_not_a_co_author(repo: Path) -> None:
    """`query "who added the wasHole property"` (luxon) found 765f90b, and the only name it printed was the
    message's "Co-authored-by: Take Weiland" trailer: the author (Isaac Cambron) was in none of the text,
    the `--json` items or plain `show`. A commit item now names its author next to its date, `--json` and
    MCP items carry `author`, and `show` prints it."""
    commit(repo, "chore: start", {"src/datetime.js": "export class DateTime {}\n"})
    git(repo, "config", "user.name", "Isaac Cambron")
    git(repo, "config", "user.email", "isaac@example.com")
    sha = commit(
        repo,
        "Add `wasHole` property to DateTime (#1753)\n\n---------\n\n"
        "Co-authored-by: Take Weiland <diesieben07@gmail.com>",
        {"src/datetime.js": "export class DateTime {\n  get wasHole() { return this.hole; }\n}\n"},
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "who added the wasHole property"
    found = query_json(repo, question)
    first = found["items"][0]
    assert first["kind"] == "git_commit" and first["ref"] == sha, found["items"]
    assert first["author"] == "Isaac Cambron"
    assert all(it["author"] is None for it in found["items"] if it["kind"] != "git_commit")
    text = run_cli("-C", str(repo), "query", question).output
    head = next(line for line in text.splitlines() if line.startswith("- "))
    assert head.endswith("by Isaac Cambron [observed] Add `wasHole` property to DateTime (#1753)"), text
    shown = run_cli("-C", str(repo), "show", sha[:8]).output.splitlines()
    assert "author Isaac Cambron" in shown[:6], shown
