"""One bad record is skipped, counted and located; the records after it are kept; nothing downstream crashes.

Every case is a real repository, a real hook log or history file, and the installed `nexusmem` run as a
process (sync, status, query, --all-projects), as the issue's attack ran it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem import project
from nexusmem.paths import shell_log_path

from helpers import commit, console_script, git, query_json, run_cli, run_script, write_commands
from helpers.env import unreadable
from helpers.git import init_repo, partial_clone

# Real processes (sync, the MCP server, a pty) several times each: seconds per test here.
pytestmark = pytest.mark.slow

NESTED = '{"ts":1700000000500,"cwd":"CWD","command":' + "[" * 100_000 + "]" * 100_000 + "}"


def hook_line(cwd: Path, command: str, ts: int = 1_700_000_000_000, **extra: Any) -> str:
    return json.dumps(
        {"ts": ts, "cwd": str(cwd), "command": command, "shell": "bash", "session": "s1", **extra}
    )


def write_log(lines: list[str]) -> Path:
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_script("-C", str(repo), *args, cwd=repo)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def stored_commands(repo: Path) -> list[str]:
    proc = cli(repo, "query", "--json", "--budget", "20000", "echo")
    assert proc.returncode == 0, proc.stderr
    return sorted(it["title"].split(" (exit")[0] for it in json.loads(proc.stdout)["items"])


def test_bad_hook_lines_are_skipped_located_and_the_rest_kept(repo: Path) -> None:
    commit(repo, "feat: start", {"a.txt": "a\n"})
    raw_lines = [
        hook_line(repo, "echo marker0"),
        NESTED.replace("CWD", str(repo)),  # RecursionError in the JSON decoder
        hook_line(repo, "echo marker1"),
        '{"ts":1700000000600,"cwd":"'
        + str(repo)
        + '","command":"echo \\ud800 marker-lone"}',  # lone surrogate
        hook_line(repo, "echo marker2"),
        '{"ts":1e20,"cwd":"' + str(repo) + '","command":"echo marker-overflow"}',  # OverflowError before
        hook_line(repo, "echo marker3"),
        '{"ts":1e15,"cwd":"' + str(repo) + '","command":"echo marker-year-33658"}',  # "year out of range"
        '{"ts":' + "9" * 400 + ',"cwd":"' + str(repo) + '","command":"echo marker-400-digits"}',
        hook_line(repo, "echo marker4", exit=10**30, duration_ms=10**400, pipestatus=[0, 2**40]),
        hook_line(repo, "echo marker5"),
    ]
    log = write_log(raw_lines)
    proc = cli(repo, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    shell = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "shell")
    assert shell["skipped"] == 5
    assert shell["added"] == 6
    assert shell["problems"][0].endswith("JSON nested too deeply")

    assert stored_commands(repo) == [f"echo marker{i}" for i in range(6)]
    # The out-of-range numbers of a valid line read as unknown, never as a crash or a stored 10**400.
    text = cli(repo, "query", "marker4").stdout
    assert "exit unknown" in text

    # status (human and JSON) lists each skipped line with its byte offset and why.
    starts = [0]
    for line in raw_lines:
        starts.append(starts[-1] + len(line.encode()) + 1)
    info = json.loads(cli(repo, "status", "--json").stdout)
    where = [entry["where"] for entry in info["skipped_records"]["shell"]["recent"]]
    assert info["skipped_records"]["shell"]["total"] == 5
    assert where[0] == f"{log} byte {starts[1]}: JSON nested too deeply"
    assert where[1].startswith(f"{log} byte {starts[3]}: 'command' is not valid Unicode")
    assert where[2].startswith(f"{log} byte {starts[5]}: 'ts' 1e+20 is outside 1970..2100")
    assert where[3].startswith(f"{log} byte {starts[7]}: 'ts' 1000000000000000.0 is outside")
    assert "(401 digits)" in where[4] or "(400 digits)" in where[4]
    human = cli(repo, "status").stdout
    assert "skipped bad records in shell: 5" in human
    assert f"byte {starts[1]}: JSON nested too deeply" in human

    # A later sync reads nothing new; the history of what was skipped stays for status.
    cli(repo, "sync", "--no-embed")
    assert json.loads(cli(repo, "status", "--json").stdout)["skipped_records"]["shell"]["total"] == 5
    # The log read again from its start (here: its head rewritten, as forget does) skips the same five
    # lines again: still five, not ten.
    data = log.read_bytes()
    with log.open("r+b") as handle:  # the first line rewritten in place, as a redaction would
        handle.seek(data.index(b"marker0"))
        handle.write(b"markerZ")
    cli(repo, "sync", "--no-embed")
    assert json.loads(cli(repo, "status", "--json").stdout)["skipped_records"]["shell"]["total"] == 5


def test_a_bad_hook_line_is_counted_by_its_own_project_and_one_naming_none_once(
    repo: Path, tmp_path: Path
) -> None:
    # Every new project's first sync said "shell: skipped 9 bad record(s)" and listed them in its status:
    # lines another project's folder names, and garbage that names none, all read again from the log's start.
    commit(repo, "feat: start", {"a.txt": "a\n"})
    other = init_repo(tmp_path / "other")
    commit(other, "feat: other", {"b.txt": "b\n"})
    theirs = [
        '{"ts":"notanumber","cwd":"' + str(other) + '","command":"make badts","shell":"bash","session":"s"}',
        '{"ts":1700000000500,"cwd":"' + str(other / "src") + '","command":null,"shell":"bash","session":"s"}',
        '{"ts":1700000000600,"cwd":"' + str(other) + '","exit":2,"command":"make broken-json"',
    ]
    nobodys = ["garbage line here", "[1,2,3]", '{"ts":1700000000700,"cwd":null,"command":"make nullcwd"}']
    ours = [
        '{"ts":"notanumber","cwd":"' + str(repo) + '","command":"make ours","shell":"bash","session":"s"}'
    ]
    log = write_log([hook_line(repo, "echo mine"), *theirs, *nobodys, *ours, hook_line(other, "echo theirs")])

    def skipped(root: Path) -> list[str]:
        proc = cli(root, "sync", "--json", "--no-embed")
        assert proc.returncode == 0, proc.stderr
        shell = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "shell")
        assert shell["skipped"] == len(shell["problems"]), shell
        return [p.split(": ", 1)[1] for p in shell["problems"]]

    # The first sync of all reads every line first: its own bad line, and the three naming no folder.
    assert skipped(repo) == [
        "not JSON (Expecting value: line 1 column 1 (char 0))",
        "a JSON list, not an object",
        "no string 'cwd'",
        "no numeric 'ts'",
    ]
    # The other project's first sync: its own three, not the others' nor the garbage again.
    problems = skipped(other)
    assert problems[:2] == ["no numeric 'ts'", "no string 'command'"], problems
    assert len(problems) == 3 and problems[2].startswith("not JSON"), problems
    status = json.loads(cli(other, "status", "--json").stdout)["skipped_records"]["shell"]
    assert status["total"] == 3 and all(str(log) in e["where"] for e in status["recent"]), status
    # A new project with no bad line of its own is told of none.
    third = init_repo(tmp_path / "third")
    commit(third, "feat: third", {"c.txt": "c\n"})
    assert skipped(third) == []
    assert json.loads(cli(third, "status", "--json").stdout)["skipped_records"] == {}
    assert "bad record" not in cli(third, "status").stdout
    # Garbage appended later is counted once, by whichever sync reads it first.
    with log.open("a", encoding="utf-8") as handle:
        handle.write("more garbage\n")
    assert skipped(third) == ["not JSON (Expecting value: line 1 column 1 (char 0))"]
    assert skipped(repo) == [] and skipped(other) == []


def test_a_store_written_before_the_range_check_still_answers(repo: Path, tmp_path: Path) -> None:
    """A time of 1e15 ms already in a store (older versions accepted it) must not crash any reader."""
    commit(repo, "feat: far future marker", {"a.txt": "a\n"})
    assert cli(repo, "sync", "--no-embed").returncode == 0
    import sqlean

    conn = sqlean.connect(str(repo / ".nexusmem" / "memory.db"))
    conn.execute("UPDATE nodes SET ts = 1000000000000000")
    conn.commit()
    conn.close()
    for args in (("query", "marker"), ("query", "--json", "marker"), ("status",), ("status", "--json")):
        proc = cli(repo, *args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert "????-??-??" in cli(repo, "query", "marker").stdout
    assert json.loads(cli(repo, "query", "--json", "marker").stdout)["items"][0]["ts"] == (
        "invalid time 1000000000000000"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_script("query", "--all-projects", "marker", cwd=elsewhere)
    assert proc.returncode == 0 and "far future marker" in proc.stdout, proc.stderr


def test_history_files_with_absurd_numbers(repo: Path, isolated_home: Path) -> None:
    """No hook installed: the history files are scraped. Absurd times skip their entry, nothing else."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    (isolated_home / ".zsh_history").write_text(
        ": 1700000000:0;echo zmarker-before\n"
        ": 99999999999999999:0;echo zmarker-overflow\n"
        f": 1700000001:{'9' * 5000};echo zmarker-digits\n"
        ": 1700000002:99999999999999;echo zmarker-long-duration\n"
        ": 1700000003:0;echo zmarker-after\n",
        encoding="utf-8",
    )
    fish = isolated_home / ".local" / "share" / "fish" / "fish_history"
    fish.parent.mkdir(parents=True)
    fish.write_text(
        "- cmd: echo fmarker-before\n  when: 1700000000\n"
        "- cmd: echo fmarker-far\n  when: 99999999999999\n"
        "- cmd: echo fmarker-digits\n  when: " + "9" * 5000 + "\n"
        "- cmd: echo fmarker-superscript\n  when: ²\n"
        "- cmd: echo fmarker-after\n  when: 1700000003\n",
        encoding="utf-8",
    )
    proc = cli(repo, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    shell = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "shell")
    assert shell["skipped"] == 2
    titles = json.loads(cli(repo, "query", "--json", "--budget", "20000", "zmarker fmarker").stdout)["items"]
    got = {it["title"].split(" (exit")[0] for it in titles}
    assert {"echo zmarker-before", "echo zmarker-after", "echo fmarker-before", "echo fmarker-after"} <= got
    assert "echo zmarker-overflow" not in got and "echo fmarker-far" not in got
    # An entry whose number is not a time keeps its command (with no time of its own).
    assert "echo fmarker-digits" in got and "echo fmarker-superscript" in got
    where = json.loads(cli(repo, "status", "--json").stdout)["skipped_records"]["shell"]["recent"]
    assert any(str(isolated_home / ".zsh_history") in w["where"] for w in where)
    assert any(str(fish) in w["where"] for w in where)


def test_one_forged_commit_is_skipped_and_the_commits_after_it_kept(repo: Path) -> None:
    commit(repo, "feat: before the forged one", {"a.txt": "a\n"})
    tree = git(repo, "write-tree").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\nauthor A <a@b> 99999999999999 +0000\n"
        "committer A <a@b> 99999999999999 +0000\n\nfeat: forged far future\n"
    )
    forged = (
        subprocess.run(
            ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
            cwd=repo,
            input=body.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    git(repo, "update-ref", "HEAD", forged)
    commit(repo, "feat: after the forged one", {"b.txt": "b\n"})
    proc = cli(repo, "sync", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    # The human summary says where, on stderr; the JSON below carries the same list.
    assert f"git: skipped 1 bad record(s): commit {forged}: author time 99999999999999" in proc.stderr
    assert "git +2 (1 skipped)" in proc.stdout
    commit(repo, "feat: one more", {"c.txt": "c\n"})
    git(repo, "update-ref", "refs/heads/side", forged)  # still reachable: a rebuild meets it again
    proc = cli(repo, "sync", "--rebuild", "--json", "--no-embed")
    git_summary = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "git")
    assert (git_summary["added"], git_summary["skipped"]) == (3, 1)
    assert f"commit {forged}: author time 99999999999999 is outside 1970..2100" in git_summary["problems"]
    assert cli(repo, "query", "forged").returncode == 0
    assert cli(repo, "status").returncode == 0


def test_a_file_name_that_is_not_utf8_is_indexed(repo: Path) -> None:
    (repo / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Caf\n\nlatin name marker\n")
    (repo / "ok.md").write_text("# Fine\n\nsecond marker\n", encoding="utf-8")
    proc = cli(repo, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    items = json.loads(cli(repo, "query", "--json", "marker").stdout)["items"]
    assert {it["ref"] for it in items} == {"caf\\xe9.md#Caf", "ok.md#Fine"}


@pytest.mark.parametrize(
    "text",
    [
        '{"sources":' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"sources":{"git":{"enabled":' + "[" * 100_000 + "]" * 100_000 + "}}}",
    ],
)
def test_deeply_nested_config_is_a_clear_error(repo: Path, text: str) -> None:
    commit(repo, "feat: start", {"a.txt": "a\n"})
    assert cli(repo, "sync", "--no-embed").returncode == 0
    (repo / ".nexusmem" / "config.json").write_text(text, encoding="utf-8")
    for args in (("sync",), ("query", "start"), ("status",)):
        proc = cli(repo, *args)
        assert proc.returncode == 1
        assert proc.stderr.strip() == (
            f"Error: {repo / '.nexusmem' / 'config.json'}: not a config: JSON nested too deeply to read"
        )


def test_deeply_nested_projects_json_reads_as_empty_with_a_warning(repo: Path) -> None:
    commit(repo, "feat: registry marker", {"a.txt": "a\n"})
    assert cli(repo, "sync", "--no-embed").returncode == 0
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    registry.write_text('{"projects":' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    for args in (("projects",), ("query", "--all-projects", "marker"), ("sync", "--no-embed")):
        proc = cli(repo, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "corrupt: its JSON is nested too deeply" in proc.stderr
    # sync kept the unreadable file aside and wrote a fresh registry.
    assert list(registry.parent.glob("projects.json.corrupt-*"))
    assert json.loads(registry.read_text(encoding="utf-8"))["projects"][0]["root"] == str(repo)


def test_one_bad_projects_json_entry_is_left_out_and_the_others_kept(tmp_path: Path) -> None:
    """Three repositories registered, one entry's "root" taken out: every command warned that projects.json
    was corrupt, treated the whole registry as empty, and the next sync wrote it back with only its own
    project (`uninstall --all-projects` then missed the others' hooks), keeping no copy. The entry is left
    out with one line naming it, the others stay, and the file is kept aside (0600) before it is rewritten."""
    repos = [init_repo(tmp_path / name) for name in ("r1", "r2", "r3")]
    for repo in repos:
        commit(repo, f"feat: {repo.name} marker", {"a.txt": "a\n"})
        assert cli(repo, "sync", "--no-embed").returncode == 0
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    data = json.loads(registry.read_text(encoding="utf-8"))
    assert [p["root"] for p in data["projects"]] == [str(r) for r in repos]
    del data["projects"][1]["root"]
    registry.write_text(json.dumps(data), encoding="utf-8")
    listed = cli(repos[0], "projects")
    assert str(repos[0]) in listed.stdout and str(repos[2]) in listed.stdout, listed.stdout
    warned = [line for line in listed.stderr.splitlines() if "projects.json" in line]
    assert len(warned) == 1 and 'entry 2 of its projects names no folder as its "root"' in warned[0], warned
    assert str(repos[1] / ".nexusmem") in warned[0]  # named by what it still holds
    assert cli(repos[0], "sync", "--no-embed").returncode == 0
    kept = json.loads(registry.read_text(encoding="utf-8"))["projects"]
    assert [p["root"] for p in kept] == [str(repos[0]), str(repos[2])]
    assert all(p["own_dir"] is True for p in kept)
    (aside,) = registry.parent.glob("projects.json.corrupt-*")
    assert json.loads(aside.read_text(encoding="utf-8")) == data
    assert aside.stat().st_mode & 0o777 == 0o600
    assert "projects.json" not in cli(repos[0], "projects").stderr


def test_a_projects_json_entry_of_the_wrong_types_is_shown_as_the_file_has_it(tmp_path: Path) -> None:
    """An entry with `"root": 5` was said to name no folder as its "root" and shown without it; a `"name":
    {"a": 1}` was listed by `projects` as Python wrote it, `{'a': 1}`. The entry is shown as JSON, its root
    said not to be a folder path (5), and a name that is no string is listed as JSON."""
    repos = [init_repo(tmp_path / name) for name in ("r1", "r2")]
    for repo in repos:
        commit(repo, f"feat: {repo.name} marker", {"a.txt": "a\n"})
        assert cli(repo, "sync", "--no-embed").returncode == 0
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    data = json.loads(registry.read_text(encoding="utf-8"))
    data["projects"][1]["name"] = {"a": 1}
    data["projects"].append({"root": 5, "name": "five"})
    registry.write_text(json.dumps(data), encoding="utf-8")
    listed = cli(repos[0], "projects")
    assert '{"a": 1}' in listed.stdout and "{'a': 1}" not in listed.stdout, listed.stdout
    warned = [line for line in listed.stderr.splitlines() if "projects.json" in line]
    assert len(warned) == 1, warned
    assert (
        'entry 3 of its projects ({"root": 5, "name": "five"}): its "root" is not a folder path (5)'
        in warned[0]
    )
    assert "names no folder" not in warned[0]


@pytest.mark.parametrize("text", ["[]", "null", '{"projects": "x"}', '{"projects": [1, null]}'])
def test_a_projects_json_of_the_wrong_shape_is_said_in_plain_words(repo: Path, text: str) -> None:
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(text, encoding="utf-8")
    proc = cli(repo, "projects")
    assert "projects.json: corrupt: " in proc.stderr, proc.stderr
    for python in ("indices must be", "not subscriptable", "object has no attribute", "'projects' must be"):
        assert python not in proc.stderr
    commit(repo, "feat: one", {"a.txt": "a\n"})
    assert cli(repo, "sync", "--no-embed").returncode == 0
    (aside,) = registry.parent.glob("projects.json.corrupt-*")
    assert aside.read_text(encoding="utf-8") == text


def test_a_commit_whose_blob_is_missing_is_kept_without_its_patch(repo: Path) -> None:
    # A damaged clone (a snapshot missing one object, a partial clone that cannot fetch): git dies at the
    # first patch it cannot read. Found on a real snapshot of go-chi/chi, which lacks a binary two of its
    # 2016 commits added and deleted: the whole sync failed. The commits after it must still be read.
    commit(repo, "feat: first change", {"a.txt": "alpha\n"})
    commit(repo, "feat: add the lost binary", {"lost.bin": "payload that will go missing\n"})
    blob = git(repo, "rev-parse", "HEAD:lost.bin").strip()
    commit(repo, "feat: drop the lost binary", {"b.txt": "bravo\n"})
    git(repo, "rm", "-q", "lost.bin")
    git(repo, "commit", "-q", "-m", "chore: remove the lost binary")
    commit(repo, "feat: parse the quokka flag", {"c.txt": "quokka_flag = True\n"})
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # loose objects in a fresh repo
    proc = cli(repo, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    sources = {s["name"]: s for s in json.loads(proc.stdout)["sources"]}
    # Every commit is kept; the two whose patch names the missing blob lose only their change (words, diffs).
    assert sources["git"]["added"] == 5
    assert sources["git"]["skipped"] == 0
    assert any(blob in p and "without their change" in p for p in sources["git"]["notes"]), sources["git"]
    assert sources["diff"]["skipped"] == 2, sources["diff"]
    assert sources["diff"]["added"] >= 3  # a.txt, b.txt, c.txt of the readable commits
    # The commit after the damage is found by its change words and its diff.
    items = json.loads(cli(repo, "query", "--json", "quokka_flag").stdout)["items"]
    assert items and items[0]["title"].startswith(("feat: parse the quokka flag", "c.txt"))
    assert any(
        it["title"] == "feat: add the lost binary"
        for it in json.loads(cli(repo, "query", "--json", "--budget", "20000", "lost binary").stdout)["items"]
    )


def test_a_partial_clone_whose_remote_hangs_syncs_at_once_and_keeps_every_commit(tmp_path: Path) -> None:
    # A `--filter=blob:none` clone behind a VPN that is down: git tried to fetch every missing blob, one
    # commit at a time, several times each, for both the commit and the diff walk (160 s for 10 commits
    # with a remote that took 2 s to fail), holding the sync lock. Nothing is fetched now.
    clone = partial_clone(tmp_path, 5)
    attempts = tmp_path / "attempts"
    git(clone, "config", "core.sshCommand", f"echo try >> {attempts}; sleep 2; false")
    started = time.monotonic()
    proc = cli(clone, "sync", "--json", "--no-embed")
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert not attempts.exists(), attempts.read_text()
    assert elapsed < 15, elapsed  # the tries alone took 5 x 4 x 2 s
    sources = {s["name"]: s for s in json.loads(proc.stdout)["sources"]}
    # Every commit is kept; those whose change names a blob the clone lacks lose only their change, and
    # the note says why, and how to bring them.
    assert sources["git"]["added"] == 5 and sources["git"]["skipped"] == 0
    (note,) = [n for n in sources["git"]["notes"] if "without their change" in n]
    assert "this partial clone lacks their objects" in note and "git log -p" in note, note
    assert sources["diff"]["skipped"] >= 4, sources["diff"]


def test_a_partial_clone_missing_most_changes_still_keeps_every_commit(tmp_path: Path) -> None:
    # A partial clone lacks every old change by design: past the 100 a damaged clone may lack before the
    # sync gives up, the rest of its history is read without its change, in one walk.
    clone = partial_clone(tmp_path, 130)
    proc = cli(clone, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    sources = {s["name"]: s for s in json.loads(proc.stdout)["sources"]}
    assert sources["git"]["added"] == 130 and sources["git"]["skipped"] == 0
    notes = sources["git"]["notes"]
    assert any("kept 130 commit(s)" in n and "partial clone" in n for n in notes), notes
    with project.load(clone).open_store(readonly=True) as store:
        titles = {n.title for n in store.iter_nodes("git_commit")}
    assert titles == {f"feat: kestrel cache step {i}" for i in range(130)}


def test_a_partial_clone_holding_its_blobs_is_read_whole(tmp_path: Path) -> None:
    # Its blobs all fetched already: nothing to fetch, and every change is read as in a full clone.
    clone = partial_clone(tmp_path, 5, fetched=True)
    attempts = tmp_path / "attempts"
    git(clone, "config", "core.sshCommand", f"echo try >> {attempts}; false")
    proc = cli(clone, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    sources = {s["name"]: s for s in json.loads(proc.stdout)["sources"]}
    assert (sources["git"]["added"], sources["git"]["notes"]) == (5, [])
    assert (sources["diff"]["added"], sources["diff"]["skipped"]) == (5, 0)
    assert not attempts.exists()


def test_a_partial_clone_keeps_its_changelog_links_and_completes_them_once_fetched(tmp_path: Path) -> None:
    # A `--filter=blob:none` clone lacks the changelog's past versions, which the "added by" pass reads:
    # git's error there threw away every link, those by issue number too (which need no blob), printed
    # git's two lines raw, and saved the cursor, so after `git log -p` fetched the blobs the next sync said
    # "changelog unchanged" and linked nothing.
    upstream = init_repo(tmp_path / "upstream")
    commit(upstream, "init", {"pool.py": "x = 1\n"})
    git(upstream, "config", "uploadpack.allowFilter", "true")
    by_number = commit(upstream, "pool: drop half-closed sockets (#412)", {"pool.py": "x = 2\n"})
    first = "## 2.1.0\n\n- The client hangs on a half-closed keep-alive connection (#412)\n"
    commit(upstream, "docs: the changelog", {"CHANGELOG.md": first})
    adder = commit(
        upstream,
        "upload: accept zero-length bodies",
        {"up.py": "y = 1\n", "CHANGELOG.md": first + "- Uploads of empty files no longer fail\n"},
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{upstream}", str(clone))

    def changelog_sync() -> tuple[dict[str, Any], set[tuple[str, str]]]:
        proc = cli(clone, "sync", "--json", "--no-embed")
        assert proc.returncode == 0, proc.stderr
        part = {s["name"]: s for s in json.loads(proc.stdout)["sources"]}["changelog"]
        with project.load(clone).open_store(readonly=True) as store:
            entries = {n.id: n.title for n in store.iter_nodes("doc_section") if n.source == "changelog"}
            commits = {n.id: n.ref for n in store.iter_nodes("git_commit")}
            links = {
                (entries[a].split(": ", 1)[1], commits[b])
                for a, b, rel in store.links_from(list(entries))
                if rel == "changelog"
            }
        return part, links

    part, links = changelog_sync()
    hang = "The client hangs on a half-closed keep-alive connection (#412)"
    assert (hang, by_number) in links, links  # its number needs no blob
    assert ("Uploads of empty files no longer fail", adder) not in links
    (note,) = part["notes"]
    assert "this partial clone lacks the changelog's past versions" in note and "git log -p" in note, note
    assert "\n" not in note
    git(clone, "log", "-p")  # the user fetches the blobs
    part, links = changelog_sync()
    assert ("Uploads of empty files no longer fail", adder) in links, part
    assert (hang, by_number) in links and part["notes"] == []


def test_a_missing_commit_keeps_the_history_after_it_and_the_other_sources(repo: Path) -> None:
    # A commit object gone from the middle of history (a damaged or partial clone): git walks down to it and
    # dies. Every sync used to fail whole: not the readable newer commits, nor docs, nor shell commands.
    for i in range(1, 5):
        commit(repo, f"feat: step number {i}", {"a.txt": f"{i}\n"})
    commit(
        repo,
        "feat: the platypus switch",
        {"b.txt": "platypus_switch = 1\n", "GUIDE.md": "# Guide\n\nwombat\n"},
    )
    missing = git(repo, "rev-parse", "HEAD~3").strip()  # "step number 2"
    (repo / ".git" / "objects" / missing[:2] / missing[2:]).unlink()
    write_log([hook_line(repo, "echo after-the-damage")])
    runs = []
    for _ in range(2):  # the cursor stays: the second sync walks again, and adds nothing twice
        proc = cli(repo, "sync", "--json", "--no-embed")
        assert proc.returncode == 0, proc.stderr
        runs.append({s["name"]: s for s in json.loads(proc.stdout)["sources"]})
    first, second = runs
    # git writes a commit only once it has read its parents: HEAD and HEAD~1 ("step number 4") come out,
    # HEAD~2 (whose parent is gone) does not.
    assert (first["git"]["added"], second["git"]["added"], second["git"]["updated"]) == (2, 0, 0)
    assert first["diff"]["added"] == 3 and first["docs"]["added"] >= 1, first
    for part in (first["git"], second["git"], first["diff"]):
        assert any("parent git cannot read" in n for n in part["notes"]), part
    titles = [
        it["title"] for it in json.loads(cli(repo, "query", "--json", "platypus_switch").stdout)["items"]
    ]
    assert "feat: the platypus switch" in titles
    assert stored_commands(repo) == ["echo after-the-damage"]


@pytest.mark.parametrize("damage", ["branch", "tag"])
def test_one_ref_git_cannot_read_does_not_stop_the_sync(repo: Path, damage: str) -> None:
    # `git show-ref` refuses every ref when one is broken (a branch left at a missing object by a crashed
    # fetch, an annotated tag whose object was pruned); HEAD's history is whole and is read.
    commit(repo, "feat: the echidna option", {"a.txt": "echidna\n"})
    if damage == "branch":
        (repo / ".git" / "refs" / "heads" / "ghost").write_text("1" * 40 + "\n")
    else:
        git(repo, "tag", "-a", "v1.0", "-m", "release 1.0")
        tag = git(repo, "rev-parse", "v1.0").strip()
        (repo / ".git" / "objects" / tag[:2] / tag[2:]).unlink()
    proc = cli(repo, "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    git_part = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "git")
    assert git_part["added"] >= 1 and any("cannot read every ref" in n for n in git_part["notes"])
    assert any(
        "echidna" in it["title"] for it in json.loads(cli(repo, "query", "--json", "echidna").stdout)["items"]
    )


def test_refs_git_cannot_read_at_all_are_said_in_gits_words(repo: Path) -> None:
    commit(repo, "feat: one", {"a.txt": "a\n"})
    git(repo, "pack-refs", "--all")
    with open(repo / ".git" / "packed-refs", "a") as fh:
        fh.write("zzzz garbage line\n")
    proc = cli(repo, "sync", "--no-embed")
    assert proc.returncode == 1
    assert "unexpected line in .git/packed-refs" in proc.stderr, proc.stderr


def test_a_moved_repository_without_a_remote_keeps_one_copy_of_its_memory(repo: Path, tmp_path: Path) -> None:
    """A repository with no remote is known by its path: moved elsewhere, its next sync gives the nodes
    recorded under the old path's id their ids under the new one (they were written again beside the old ones,
    and `sync --rebuild` was the mend), and says so once."""
    commit(repo, "add the parser", {"parser.py": "def parse():\n    return 1\n"})
    commit(repo, "fix the parser", {"parser.py": "def parse():\n    return 2\n"})
    write_commands(repo, [(1_700_000_000_000, "pytest -q", 1), (1_700_000_060_000, "pytest -q", 0)])
    first = run_cli("-C", str(repo), "sync", "--no-embed")
    assert "id changed" not in first.output
    moved = tmp_path / "elsewhere" / "repo"
    moved.parent.mkdir()
    os.rename(repo, moved)
    second = run_cli("-C", str(moved), "sync", "--no-embed")
    assert "this repository's id changed" in second.output, second.output
    assert "now go by the new id" in second.output and "--rebuild" not in second.output
    again = run_cli("-C", str(moved), "sync", "--no-embed")
    assert "id changed" not in again.output
    with project.load(moved).open_store(readonly=True) as store:
        assert store.count_project(project.load(moved).id) == store.node_count()
        assert store.counts_by_kind()["git_commit"] == 2
        assert store.counts_by_kind()["shell_command"] == 2
    # The hook log names the old folder, which is gone: the moved repository's, read back by a rebuild.
    rebuilt = run_cli("-C", str(moved), "sync", "--rebuild", "--no-embed")
    assert "the rebuild read back" not in rebuilt.output, rebuilt.output
    # Log lines that are gone cannot be read back: the rebuild says how many commands it dropped.
    shell_log_path().write_bytes(b"")
    rebuilt = run_cli("-C", str(moved), "sync", "--rebuild", "--no-embed")
    assert "the rebuild read back 0 of the 2 shell command(s)" in rebuilt.output, rebuilt.output


def test_a_repository_in_a_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    # A folder named in Latin-1 on a UTF-8 system (`caf\xe9/`): with no remote, the project's id is its path,
    # which Python holds with a surrogate escape that SQLite refuses; every sync ended in an internal error.
    # The bash hook writes such a byte as the \u00XX of its Latin-1 reading: its lines are the project's too.
    parent = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    parent.mkdir()
    repo = parent / "r"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, "feat: the quoll setting", {"a.txt": "quoll\n"})
    # What the prompt hooks write for the byte 0xE9 (`\xe9`, as in a file name), and what they wrote before.
    shown = str(repo).replace("\udce9", "\\xe9")
    before = str(repo).replace("\udce9", "\u00e9")
    write_log(
        [
            hook_line(Path(shown), "echo typed-in-the-latin-folder"),
            hook_line(Path(before), "echo typed-before"),
        ]
    )

    def nexusmem(*args: str) -> subprocess.CompletedProcess[str]:  # what it prints names the folder: bytes
        return subprocess.run(
            [console_script(), *args], cwd=repo, capture_output=True, text=True, errors="replace", check=False
        )

    proc = nexusmem("sync", "--no-embed")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    items = json.loads(nexusmem("query", "--json", "--budget", "20000", "quoll typed latin folder").stdout)[
        "items"
    ]
    titles = {it["title"] for it in items}
    assert (
        "feat: the quoll setting" in titles and "echo typed-in-the-latin-folder (exit unknown)" in titles
    ), titles
    assert json.loads(nexusmem("status", "--json").stdout)["by_kind"]["shell_command"] == 2


def test_every_path_printed_for_a_folder_whose_name_is_not_utf8_spells_the_byte(tmp_path: Path) -> None:
    # A repository in a Latin-1 folder (`caf\xe9-repo`): `status --json` (doctor, projects, query, sync, show)
    # wrote the raw byte 0xE9, so its output was not UTF-8 and no JSON parser read it; human output printed
    # the raw byte too, while a file name is spelled `\xNN` (README). Every path is spelled `\xNN` now.
    repo = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9-repo"))
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, "feat: the quoll setting", {"a.txt": "quoll\n"})
    spelled = str(repo).replace("\udce9", "\\xe9")  # the path as NexusMem prints it: /tmp/…/caf\xe9-repo

    def printed(*args: str, ok: tuple[int, ...] = (0,)) -> str:
        proc = subprocess.run([console_script(), *args], cwd=repo, capture_output=True, check=False)
        assert proc.returncode in ok, proc.stderr.decode("utf-8", "replace")
        return proc.stdout.decode("utf-8")  # strict: a raw 0xE9 fails here, as it failed json.load

    assert spelled in printed("sync", "--no-embed")  # "Initialised and synced /tmp/…/caf\xe9-repo …"
    human = printed("status")
    assert f"root      {spelled}\n" in human, human
    status = json.loads(printed("status", "--json"))
    assert status["root"] == spelled and status["database"] == f"{spelled}/.nexusmem/memory.db", status
    assert json.loads(printed("sync", "--json", "--no-embed"))["root"] == spelled
    assert [p["root"] for p in json.loads(printed("projects", "--json"))["projects"]] == [spelled]
    doctor = json.loads(printed("doctor", "--json", ok=(0, 1)))
    assert any(spelled in c["detail"] for c in doctor["checks"]), doctor
    items = json.loads(printed("query", "--json", "quoll setting"))["items"]
    assert items and items[0]["project"] == "caf\\xe9-repo", items
    assert json.loads(printed("show", "--json", items[0]["id"]))["project"] == "caf\\xe9-repo"


def test_minus_c_takes_a_folder_named_as_nexusmem_prints_it(tmp_path: Path) -> None:
    # Every path NexusMem prints spells a byte that is not UTF-8 `\xNN` (`caf\xe9-repo`), and MCP projectRoot
    # takes it back; `-C` did not: a user pasting the path `status` printed got "no such directory". It is read
    # as that byte when nothing exists at the path as written, so a folder whose name holds a backslash works.
    repo = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9-repo"))
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, "feat: the quoll setting", {"a.txt": "quoll\n"})
    literal = tmp_path / "lit\\xe9-repo"  # a real backslash in its name
    git(tmp_path, "init", "-q", "-b", "main", str(literal))
    commit(literal, "feat: the wombat setting", {"b.txt": "wombat\n"})
    spelled = str(repo).replace("\udce9", "\\xe9")

    def nexusmem(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([console_script(), *args], cwd=tmp_path, capture_output=True, check=False)

    for args in (
        ["-C", spelled, "sync", "--no-embed", "--json"],  # the plain path (cli/plain.py)
        ["sync", "--no-embed", "--json", "--link-failures", "-C", spelled],
        ["-C", spelled, "status", "--json"],  # click's
        ["status", "--json", "-C", spelled],
    ):
        proc = nexusmem(*args)
        assert proc.returncode == 0, (args, proc.stderr.decode("utf-8", "replace"))
        assert json.loads(proc.stdout)["root"] == spelled, (args, proc.stdout)
    for args in (["-C", spelled, "query", "--json", "quoll"], ["query", "--json", "-C", spelled, "quoll"]):
        proc = nexusmem(*args)
        assert proc.returncode == 0, (args, proc.stderr.decode("utf-8", "replace"))
        assert json.loads(proc.stdout)["items"][0]["title"] == "feat: the quoll setting", proc.stdout
    proc = nexusmem("precheck", "-C", spelled)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    # A folder whose name really holds `\xe9` is the one meant when it exists.
    proc = nexusmem("-C", str(literal), "sync", "--no-embed", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["root"] == str(literal), proc.stderr
    # Nothing at either spelling: the path as typed is named.
    proc = nexusmem("-C", str(tmp_path / "nowhere\\xe9"), "status")
    assert proc.returncode != 0 and "nowhere\\xe9" in proc.stderr.decode("utf-8", "replace"), proc.stderr


def test_a_doc_too_big_and_a_doc_that_cannot_be_read_are_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each was counted in the sync's `skipped` but named nowhere: the user saw "3 skipped" and no file.
    commit(
        repo,
        "feat: a guide, a locked page, a huge page and a logo",
        {
            "guide.md": "# Guide\n\nread me\n",
            "locked.md": "# Locked\n\nno one may read me\n",
            "huge.md": "# Huge\n\n" + "word " * 1000 + "\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary\x00",
        },
    )
    _init_with_doc_limit(repo, 2000)
    unreadable(monkeypatch, "locked.md")
    sources = {
        s["name"]: s
        for s in json.loads(run_cli("-C", str(repo), "sync", "--json", "--no-embed").stdout)["sources"]
    }
    docs, diff = sources["docs"], sources["diff"]
    assert docs["added"] == 1 and docs["skipped"] == 2, docs
    assert sorted(docs["problems"]) == [
        "huge.md: 5,009 bytes, over sources.docs.maxFileBytes (2,000)",
        "locked.md: cannot be read (Permission denied)",
    ], docs
    # A binary file is skipped by design (README, "Diff indexing is bounded on purpose"): counted, never
    # listed as a bad record.
    assert diff["skipped"] >= 1 and not any("logo.png" in p for p in diff["problems"]), diff
    # What `sync` prints says the same, and `status` keeps them.
    shown = run_cli("-C", str(repo), "sync", "--no-embed").stderr
    assert "docs: skipped 2 bad record(s)" in shown and "locked.md: cannot be read" in shown, shown
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["skipped_records"]
    assert any("huge.md" in r["where"] for r in status["docs"]["recent"]), status


def test_a_changelog_too_big_and_a_changelog_that_cannot_be_read_are_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The changelog source dropped a file over sources.docs.maxFileBytes without counting it, and counted an
    # unreadable one ("1 skipped") without saying which; it also forgot the entries it had read before.
    commit(
        repo,
        "feat: release notes (#7)",
        {
            "CHANGES.md": "# Changes\n\n## 1.0\n\n- Fix the quoll parser (#7)\n",
            "NEWS.md": "# News\n\n## 1.0\n\n- The wombat exporter is faster\n",
            "CHANGELOG.md": "# Changelog\n\n## 1.0\n\n" + "- word\n" * 1000,
        },
    )
    _init_with_doc_limit(repo, 2000)

    def changelog(*args: str) -> dict[str, Any]:
        out = json.loads(run_cli("-C", str(repo), "sync", "--json", "--no-embed", *args).stdout)
        return {s["name"]: s for s in out["sources"]}["changelog"]

    first = changelog()
    assert first["skipped"] == 1, first
    assert first["problems"] == ["CHANGELOG.md: 7,021 bytes, over sources.docs.maxFileBytes (2,000)"], first
    # Nothing changed: not named again, so `status`'s history does not get the same name at every sync.
    again = changelog()
    assert again["skipped"] == 0 and again["problems"] == [], again

    commit(repo, "docs: news", {"NEWS.md": "# News\n\n## 1.0\n\n- The wombat exporter is faster\n- More\n"})
    real_read = Path.read_bytes
    unreadable(monkeypatch, "NEWS.md")
    locked = changelog()
    assert locked["skipped"] == 2, locked
    assert sorted(locked["problems"]) == [
        "CHANGELOG.md: 7,021 bytes, over sources.docs.maxFileBytes (2,000)",
        "NEWS.md: cannot be read (Permission denied)",
    ], locked
    shown = run_cli("-C", str(repo), "sync", "--no-embed").stderr
    assert "changelog: skipped 2 bad record(s)" in shown and "NEWS.md: cannot be read" in shown, shown
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["skipped_records"]
    assert any("CHANGELOG.md" in r["where"] for r in status["changelog"]["recent"]), status
    # The entry read before the file became unreadable is kept.
    titles = [it["title"] for it in query_json(repo, "wombat exporter faster")["items"]]
    assert any(t.startswith("NEWS.md") and "wombat" in t for t in titles), titles
    monkeypatch.setattr(Path, "read_bytes", real_read)
    # Readable again: read at the next sync, though nothing changed since.
    back = changelog()
    assert back["skipped"] == 1 and back["added"] + back["updated"] >= 1, back


def _init_with_doc_limit(repo: Path, max_bytes: int) -> None:
    """`init` REPO, then set its sources.docs.maxFileBytes to MAX_BYTES."""
    project.init(repo)
    config_file = repo / ".nexusmem" / "config.json"
    settings = json.loads(config_file.read_text(encoding="utf-8"))
    settings["sources"]["docs"]["maxFileBytes"] = max_bytes
    config_file.write_text(json.dumps(settings), encoding="utf-8")
