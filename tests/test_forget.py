"""forget and scrub on real repositories, real SQLite files and the real shell log: gone means gone."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from helpers import commit, git, init_repo, query_json, run_cli, run_script, shell_node, typed_in_bash

VALUE = "Zebracorn-Quux-4417"
CJK = "缓存锁文件过期"


def log_path(home: Path) -> Path:
    return home / ".nexusmem" / "shell-history.jsonl"


def log_line(cwd: Path, command: str, ts: int, session: str = "s1", exit_code: int = 0) -> str:
    obj = {
        "ts": ts,
        "cwd": str(cwd),
        "exit": exit_code,
        "command": command,
        "shell": "bash",
        "session": session,
    }
    return json.dumps({**obj, "v": 1}, ensure_ascii=False) + "\n"


def append_log(home: Path, *lines: str) -> None:
    path = log_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))
    os.chmod(path, 0o600)


def db_files(repo: Path) -> list[Path]:
    base = repo / ".nexusmem" / "memory.db"
    return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]


def holds(repo: Path, needle: str) -> list[str]:
    """The database files whose raw bytes contain NEEDLE (UTF-8)."""
    raw = needle.encode()
    return [p.name for p in db_files(repo) if raw in p.read_bytes()]


def leaky_repo(repo: Path, home: Path) -> None:
    """A repo whose commit message, a diff, a doc (with CJK text) and two shell commands hold VALUE."""
    base = int(time.time()) - 3 * 86_400
    commit(repo, "docs: start", {"README.md": "# Demo\n\nNothing to see.\n"}, when=base)
    commit(
        repo,
        f"feat: connect to the {VALUE} cluster",
        {"src/conf.py": f"CLUSTER = '{VALUE}'\nTIMEOUT = 3\n"},
        when=base + 60,
    )
    commit(
        repo,
        "docs: deployment notes",
        {"docs/deploy.md": f"# Deploy\n\nWe deploy to {VALUE} every Friday.\n\n## 缓存\n\n{CJK} {VALUE}\n"},
        when=base + 120,
    )
    commit(repo, "chore: unrelated", {"src/other.py": "X = 1\n"}, when=base + 180)
    ms = base * 1000
    append_log(
        home,
        log_line(repo, "make test", ms + 1000),
        log_line(repo, f"ssh deploy@{VALUE}.internal", ms + 2000, exit_code=255),
        log_line(repo, f'curl -H "X-Cluster: {VALUE}" https://example.test', ms + 3000),
        log_line(repo, "git status", ms + 4000),
    )


def shell_refs(repo: Path) -> list[str]:
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        return sorted(n.ref for n in store.iter_nodes("shell_command"))


@pytest.mark.slow
def test_forget_removes_every_byte_and_no_sync_brings_it_back(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync")
    assert holds(repo, VALUE), "the test is meaningless unless the value was stored first"
    before = run_cli("-C", str(repo), "status", "--json").stdout

    dry = run_cli("-C", str(repo), "forget", VALUE).output
    assert "would delete" in dry and "git_commit" in dry and "shell_command" in dry and "dry run" in dry
    assert "2 shell-log line(s)" in dry
    assert run_cli("-C", str(repo), "status", "--json").stdout == before  # a dry run changes nothing

    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert "deleted" in out and "verified: the value is in none" in out, out
    assert holds(repo, VALUE) == []
    assert holds(repo, CJK) == []  # the CJK section held the value too: its trigram rows went with it
    assert VALUE not in log_path(isolated_home).read_text(encoding="utf-8")
    assert stat.S_IMODE(log_path(isolated_home).stat().st_mode) == 0o600
    assert query_json(repo, VALUE)["items"] == []
    wal = Path(f"{repo}/.nexusmem/memory.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0

    # Later syncs, including a rebuild from git history, never bring it back; the gate counts the drops.
    commit(repo, f"fix: stop talking to {VALUE}", {"src/conf.py": "CLUSTER = 'other'\n"})
    append_log(isolated_home, log_line(repo, f"ping {VALUE}", int(time.time() * 1000)))
    data = json.loads(run_cli("-C", str(repo), "sync", "--json").stdout)
    denied = {s["name"]: s["denied"] for s in data["sources"]}
    # The new log line never reaches the shell source: the sync's log pass blanks it in place first.
    assert denied["git"] == 1 and denied["diff"] == 1 and denied["shell"] == 0
    assert VALUE not in log_path(isolated_home).read_text(encoding="utf-8")
    data = json.loads(run_cli("-C", str(repo), "sync", "--rebuild", "--json").stdout)
    denied = {s["name"]: s["denied"] for s in data["sources"]}
    assert denied["git"] == 2 and denied["docs"] >= 1
    assert holds(repo, VALUE) == []
    assert query_json(repo, VALUE)["items"] == []
    # Nodes that never held the value are all still there.
    titles = [it["title"] for it in query_json(repo, "unrelated")["items"]]
    assert "chore: unrelated" in titles


def test_forget_reaches_the_changelog_text_lent_to_a_commit(repo: Path, isolated_home: Path) -> None:
    """A changelog entry lends its text to the commits it names (their low-weight notes). Forgetting a value
    only the entry held deleted the entry but left its copy in the commit: still searchable, still on disk,
    and forget said "another process may hold them open"."""
    commit(repo, "fix(pricing): round before converting (#14)", {"pricing.py": "ROUND = True\n"})
    entry = f"# Changelog\n\n## 0.2.0\n\n- Prices are stored for {VALUE} in cents (#14).\n"
    commit(repo, "docs: changelog for 0.2.0", {"CHANGELOG.md": entry})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, VALUE), "the test is meaningless unless the value was stored first"
    found = query_json(repo, VALUE)["items"]
    assert any(it["title"].startswith("fix(pricing)") for it in found), found

    dry = run_cli("-C", str(repo), "forget", VALUE).output
    assert "would clear the text lent to" in dry, dry
    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert "cleared the text lent to" in out and "verified: the value is in none" in out, out
    assert "still in the database files" not in out
    assert holds(repo, VALUE) == []
    assert query_json(repo, VALUE)["items"] == []
    # The commit stays (its own text never held the value), and a sync does not lend the text back.
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, VALUE) == []
    titles = [it["title"] for it in query_json(repo, "round before converting")["items"]]
    assert "fix(pricing): round before converting (#14)" in titles


def test_a_preview_neither_lists_nor_shows_a_forgotten_value(repo: Path, isolated_home: Path) -> None:
    """scan-git (and every scan-*) ignored the deny-list: the forgotten commit was listed as new on every
    run, its title (the value) printed again, though the next sync stored nothing."""
    commit(repo, "docs: start", {"README.md": "# Demo\n"})
    commit(repo, f"feat: connect to the {VALUE} cluster", {"conf.py": "X = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", VALUE, "--yes")
    preview = run_cli("-C", str(repo), "scan-git").output
    assert VALUE not in preview, preview
    assert "0 new" in preview and "1 denied" in preview, preview
    listed = run_cli("-C", str(repo), "scan-git", "--json").output
    assert VALUE not in listed and json.loads(listed) == []


def test_tombstone_and_audit_hold_counts_not_content(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", VALUE, "--yes")
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        stones = store.tombstones()
        audit = store.audit_log()
        entries = store.deny_entries()
    assert len(stones) == 1 and stones[0]["reason"] == "forget"
    assert stones[0]["removed"] == sum(stones[0]["kinds"].values()) >= 5
    assert all(len(i) == 24 for i in stones[0]["node_ids"])
    assert [a["action"] for a in audit] == ["forget", "scrub-log"]
    assert VALUE not in json.dumps([stones, audit, entries]) and VALUE.lower() not in json.dumps(entries)
    assert entries[0]["kind"] == "literal" and entries[0]["spec"]["length"] == len(VALUE)


@pytest.mark.slow
def test_shell_log_rewrite_neither_duplicates_nor_misses_lines(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert len(shell_refs(repo)) == 4
    before = log_path(isolated_home).stat()
    run_cli("-C", str(repo), "forget", VALUE, "--yes")
    after = log_path(isolated_home).stat()
    # Rewritten in place: same file, same size (the doomed lines are blanked), so no offset moves.
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert shell_refs(repo) == ["git status", "make test"]
    now = int(time.time() * 1000)
    append_log(isolated_home, log_line(repo, "pytest -x", now), log_line(repo, f"echo {VALUE}", now + 1))
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert shell_refs(repo) == ["git status", "make test", "pytest -x"]  # once each, the value's line dropped
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert shell_refs(repo) == ["git status", "make test", "pytest -x"]
    lines = log_path(isolated_home).read_text(encoding="utf-8").splitlines()
    assert len([line for line in lines if line.strip()]) == 3 and VALUE not in "".join(lines)


@pytest.mark.slow
def test_keep_log_leaves_the_log_and_the_gate_still_holds(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    original = log_path(isolated_home).read_bytes()
    out = run_cli("-C", str(repo), "forget", VALUE, "--yes", "--keep-log").output
    assert "left as it is" in out
    assert log_path(isolated_home).read_bytes() == original
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    assert shell_refs(repo) == ["git status", "make test"]
    assert holds(repo, VALUE) == []


def test_log_is_never_truncated_when_the_rewrite_fails(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaky_repo(repo, isolated_home)
    original = log_path(isolated_home).read_bytes()
    from nexusmem.hygiene import denylist, forget

    def broken(fd: int, data: bytes, offset: int) -> int:
        raise OSError("disk full")

    entry = denylist.make_literal(VALUE, False)
    monkeypatch.setattr(os, "pwrite", broken)
    with pytest.raises(OSError):
        forget.scrub_log([entry], dry_run=False)
    # Nothing copied, renamed or truncated: the log is as it was and no temp copy is left behind.
    assert log_path(isolated_home).read_bytes() == original
    names = {p.name for p in log_path(isolated_home).parent.iterdir()}
    assert not [n for n in names if n.endswith(".tmp")], names


@pytest.mark.slow
def test_ignore_case_and_regex(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli("-C", str(repo), "forget", VALUE.upper(), "--ignore-case", "--yes").output
    assert "verified" in out
    assert holds(repo, VALUE) == []
    commit(repo, "feat: ticket CORP-1234 and corp-9876", {"a.txt": "a\n"})
    commit(repo, "feat: ticket CORP-12", {"b.txt": "b\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli("-C", str(repo), "forget", "--regex", r"corp-[0-9]{4}", "--ignore-case", "--yes").output
    assert "keeps its pattern" in out
    titles = [it["title"] for it in query_json(repo, "ticket")["items"]]
    assert titles and all("CORP-12" in t and "1234" not in t and "9876" not in t for t in titles)
    listed = run_cli("-C", str(repo), "forget", "--list").output
    assert "regex  /corp-[0-9]{4}/ (ignore case)" in listed and f"value  {len(VALUE)} byte(s)" in listed
    assert VALUE.lower() not in listed.lower()


@pytest.mark.slow
def test_a_regex_with_no_regex_syntax_is_kept_as_a_keyed_hash(repo: Path, isolated_home: Path) -> None:
    """`forget --regex 'Zebracorn-Quux-4417'` (a pasted secret: only literal characters) kept the pattern as
    written in memory.db, where `forget --list` showed it: a regex cannot be hashed, a literal can. Such a
    pattern is now the literal value (a keyed hash, with a note saying so); a real pattern is told that the
    literal form is the one for a secret."""
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    dry = run_cli("-C", str(repo), "forget", "--regex", VALUE).output
    assert "has no regex syntax" in dry and "keyed hash" in dry, dry
    done = run_cli("-C", str(repo), "forget", "--regex", VALUE, "--yes").output
    assert "has no regex syntax" in done and "keeps its pattern" not in done, done
    assert "verified" in done, done
    listed = run_cli("-C", str(repo), "forget", "--list").output
    assert f"value  {len(VALUE)} byte(s)" in listed and VALUE not in listed, listed
    assert holds(repo, VALUE) == []
    data = json.loads(run_cli("-C", str(repo), "forget", "--regex", VALUE, "--json").stdout)
    assert data["pattern_as_value"] is True and data["pattern_kept"] is False and data["entries_known"] == 1
    # A real pattern is kept as written, and the note says which form a secret takes.
    real = run_cli("-C", str(repo), "forget", "--regex", "Fri[d]ay", "--yes").output
    assert "keeps its pattern as written in memory.db" in real, real
    assert "for a secret, forget the value itself" in real, real
    assert "regex  /Fri[d]ay/" in run_cli("-C", str(repo), "forget", "--list").output


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--regex", "("], "invalid regular expression"),
        (["--regex", "a{1001}"], "invalid repetition size"),
        (["--regex", ""], "empty"),
        (["--regex", "a*"], "matches the empty string"),
        (["--regex", r"\b"], "matches the empty string"),
        (["--regex", "x|"], "matches the empty string"),
        (["--regex", "ab\udcffcd"], "holds a byte that is not UTF-8"),  # `$'ab\xffcd'`: it crashed (exit 3)
        (["   "], "empty"),
    ],
)
def test_bad_patterns_are_refused(repo: Path, args: list[str], message: str) -> None:
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    result = run_cli("-C", str(repo), "forget", *args, "--yes", ok=False)
    # exit 2: the value given cannot be used (docs/contracts.md, section 9); it was 1, a failed command's
    assert result.exit_code == 2 and message in result.output
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        assert store.deny_entries() == [] and store.node_count() == 1


@pytest.mark.slow
def test_export_import_carries_the_deny_list_to_a_clone(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", VALUE, "--yes", "--keep-log")
    run_cli("-C", str(repo), "forget", "--regex", "Fri[d]ay", "--yes", "--keep-log")
    export = tmp_path / "deny.json"
    out = run_cli("-C", str(repo), "forget", "--export", str(export)).output
    assert "wrote 2 entr(ies)" in out
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
    assert VALUE not in export.read_text(encoding="utf-8")

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert holds(clone, VALUE)  # git history carries it back: the limitation import closes
    dry = run_cli("-C", str(clone), "forget", "--import", str(export)).output
    assert "would delete" in dry and holds(clone, VALUE)
    assert "deny-list: would add 2 entr(ies)" in dry, dry  # it never said how many it would add
    run_cli("-C", str(clone), "forget", "--import", str(export), "--yes")
    # The regex entry keeps its pattern ("Fri[d]ay"), not what it matched.
    assert holds(clone, VALUE) == [] and holds(clone, "Friday") == []
    run_cli("-C", str(clone), "sync", "--rebuild", "--no-embed")
    assert holds(clone, VALUE) == []
    again = run_cli("-C", str(clone), "forget", "--import", str(export), "--yes", "--json").stdout
    assert json.loads(again)["entries_known"] == 2 and json.loads(again)["removed"] == 0


@pytest.mark.slow
def test_global_entry_reaches_every_project_at_its_next_sync(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, f"feat: also mentions {VALUE}", {"x.txt": "x\n"})
    run_cli("-C", str(other), "sync", "--no-embed")
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli("-C", str(repo), "forget", VALUE, "--global", "--yes").output
    assert "added to the user-wide list" in out
    # Only this project's files were read back: the other one is named as still holding the value.
    assert "none of this project's memory.db bytes" in out
    assert "1 other registered project(s) apply the user-wide entry at their next sync" in out
    assert f"  - {other.resolve()}\n" in out
    deny = isolated_home / ".nexusmem" / "deny-list.json"
    assert stat.S_IMODE(deny.stat().st_mode) == 0o600 and VALUE not in deny.read_text(encoding="utf-8")
    assert holds(other, VALUE)  # not touched until its own sync
    run_cli("-C", str(other), "sync", "--no-embed")
    assert holds(other, VALUE) == []
    run_cli("-C", str(other), "sync", "--rebuild", "--no-embed")
    assert holds(other, VALUE) == [] and query_json(other, "mentions")["items"] == []
    listed = run_cli("-C", str(other), "forget", "--list").output
    assert "global" in listed
    # A repository set up after it has no commit in memory to derive words for: nothing to say about it.
    third = tmp_path / "third"
    third.mkdir()
    git(third, "init", "-q", "-b", "main")
    commit(third, "feat: a third project", {"y.txt": "y\n"})
    first = run_cli("-C", str(third), "sync", "--no-embed", "--json").output
    assert "deriving the change words of the 0 commit(s)" not in first


def test_corrupt_user_wide_list_fails_sync_loudly(repo: Path, isolated_home: Path) -> None:
    commit(repo, "init")
    (isolated_home / ".nexusmem").mkdir(exist_ok=True)
    (isolated_home / ".nexusmem" / "deny-list.json").write_text("{not json", encoding="utf-8")
    result = run_cli("-C", str(repo), "sync", "--no-embed", ok=False)
    assert result.exit_code == 1 and "deny-list.json" in result.output


def test_scrub_applies_current_rules_to_old_nodes(repo: Path, isolated_home: Path) -> None:
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store() as store, store.transaction():
        # What an older NexusMem (without today's rule) would have stored.
        store.upsert(
            [
                shell_node(
                    f"aws configure set key {secret}",
                    1_700_000_000_000,
                    project=proj.id,
                    key="old",
                    note=secret,
                )
            ]
        )
    assert holds(repo, secret)
    dry = run_cli("-C", str(repo), "scrub", "--dry-run").output
    assert "would redact 1 of 2" in dry and holds(repo, secret)
    out = run_cli("-C", str(repo), "scrub").output
    assert "redacted 1 of 2" in out and "aws-key" in out
    backups = list((repo / ".nexusmem").glob("memory.db.pre-scrub-*.bak"))
    assert len(backups) == 1 and stat.S_IMODE(backups[0].stat().st_mode) == 0o600
    assert secret.encode() in backups[0].read_bytes()  # the backup is a real copy (hence 0600)
    assert holds(repo, secret) == []
    items = query_json(repo, "aws configure")["items"]
    assert items and "«redacted:aws-key»" in items[0]["title"]


def _older_rules_said(repo: Path) -> tuple[bool, list[str], list[str]]:
    """(status --json's older_redaction_rules, status's lines saying so, doctor's problems saying so)."""
    said = "this memory was written with older redaction rules: run `nexusmem scrub`"
    info = json.loads(run_cli("-C", str(repo), "status", "--json").output)
    lines = [line for line in run_cli("-C", str(repo), "status").output.splitlines() if said in line]
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).output)
    problems = [
        f"{c['detail']} | {c['fix']}" for c in report["checks"] if not c["ok"] and said in c["detail"]
    ]
    return info["older_redaction_rules"], lines, problems


def test_a_memory_older_redaction_rules_wrote_is_told_to_run_scrub_until_it_does(
    repo: Path, isolated_home: Path
) -> None:
    """The upgrade walkthrough: a code diff line "the password is PurpleMonkeyDishwasher42" an older release
    stored (its rules kept it) was shown by `query` beside the redacted re-read doc, and `doctor` said no
    problems; a manual `nexusmem scrub` redacted it. The memory records which redaction rules wrote it: a
    new one is this release's, one from before the record is older, and doctor and status say to run scrub
    until it has run."""
    password = "PurpleMonkeyDishwasher42"
    commit(repo, "docs: db", {"DB.md": f"# DB\n\nthe password is {password}\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert _older_rules_said(repo) == (False, [], [])  # a new memory: this release's rules wrote it

    from nexusmem import project
    from nexusmem.redact import RULES_KEY, RULES_VERSION

    from helpers.nodes import node

    proj = project.load(repo)
    with proj.open_store() as store, store.transaction():
        # What the older release stored (the diff line as it was) and recorded (no rules version).
        old = node("code_diff", text=f"+the password is {password}", project=proj.id, key="DB.md@old")
        store.upsert([old])
        store.delete_meta(RULES_KEY)
    shown = run_cli("-C", str(repo), "query", "the password is").output
    assert f"the password is {password}" in shown and "the password is «redacted:password»" in shown, shown
    older, lines, problems = _older_rules_said(repo)
    assert older and lines == [
        "redaction: this memory was written with older redaction rules: run `nexusmem scrub`"
    ]
    assert len(problems) == 1 and problems[0].endswith(f"| nexusmem -C {repo} scrub"), problems

    assert "redacted 1 of" in run_cli("-C", str(repo), "scrub").output
    shown = run_cli("-C", str(repo), "query", "the password is").output
    assert password not in shown and shown.count("the password is «redacted:password»") >= 2, shown
    assert _older_rules_said(repo) == (False, [], [])

    # A memory from before the record that holds nothing older rules missed: scrub changes nothing, and
    # records the version all the same.
    with proj.open_store() as store, store.transaction():
        store.delete_meta(RULES_KEY)
    assert _older_rules_said(repo)[0]
    assert "redacted 0 of" in run_cli("-C", str(repo), "scrub").output
    with proj.open_store(readonly=True) as store:
        assert store.get_meta(RULES_KEY) == str(RULES_VERSION)
    assert _older_rules_said(repo) == (False, [], [])


def test_scrub_re_keys_a_project_id_that_holds_a_credential(repo: Path, isolated_home: Path) -> None:
    """`scrub`, which README "Upgrading" says to run, said "secrets: none" while the project id still held a
    token of the origin URL (every node's project_id, the `project.id` meta, projects.json): it never looked
    at the id. It now re-keys the memory to the clean id, as the upgrade's migration does, and says so."""
    token = "ghp_" + "wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"
    git(repo, "remote", "add", "origin", f"https://github.com/acme/widget.git?access_token={token}")
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    head = json.loads(run_cli("-C", str(repo), "show", "HEAD", "--json").output)["id"]
    run_cli("-C", str(repo), "review", head, "--verify")
    from nexusmem import project

    held = f"github.com/acme/widget.git?access_token={token}".lower()
    with project.load(repo).open_store() as store, store.transaction():  # an id a rule learned since finds
        store.rekey_project(held)
        store.set_meta("project.id", held)
    registry = isolated_home / ".nexusmem" / "projects.json"
    listed = json.loads(registry.read_text())
    listed["projects"][0]["id"] = held
    registry.write_text(json.dumps(listed))
    needle = token.lower()

    dry = run_cli("-C", str(repo), "scrub", "--dry-run").output
    assert "would re-key github.com/acme/widget" in dry and "github-token" in dry, dry
    assert holds(repo, needle) and needle in registry.read_text()
    out = run_cli("-C", str(repo), "scrub").output
    assert "secrets: 1 github-token" in out and "re-keyed its 1 node(s) to github.com/acme/widget" in out, out
    assert "re-keyed 1 project id(s) in the registry" in out, out
    assert holds(repo, needle) == [] and needle not in registry.read_text()
    shown = json.loads(run_cli("-C", str(repo), "show", head, "--json").output)
    assert shown["trust"] == "verified"


def test_scrub_leaves_a_command_that_ends_in_a_secret_flag_as_the_sync_stored_it(
    repo: Path, isolated_home: Path
) -> None:
    # A flag that takes a secret, given none: a pass over the stored title must not take the exit code
    # for the flag's value (and report a secret that was never there).
    commit(repo, "init")
    now = int(time.time() * 1000)
    commands = ["vault login --token", "psql --password", "heroku auth:token --secret"]
    append_log(isolated_home, *(log_line(repo, c, now + i) for i, c in enumerate(commands)))
    run_cli("-C", str(repo), "sync", "--no-embed")
    before = {i["title"] for i in query_json(repo, "vault psql heroku login password secret")["items"]}
    assert {f"{c} (exit 0)" for c in commands} <= before, before
    out = run_cli("-C", str(repo), "scrub").output
    assert "redacted 0 of" in out, out
    after = {i["title"] for i in query_json(repo, "vault psql heroku login password secret")["items"]}
    assert after == before


@pytest.mark.parametrize("how", ["forget", "scrub"])
def test_a_secret_an_older_release_kept_in_the_docs_cursor_is_removed(
    repo: Path, isolated_home: Path, how: str
) -> None:
    """An older release kept each doc's path in the docs cursor as it was (a folder named after a token):
    forget found nothing to delete, warned that "another process" held the value, and scrub saw nothing."""
    token = "xoxb-12345678901-123456789012-" + "QwErTyUiOpAsDfGhJkLzXcVb"
    commit(repo, "docs", {"docs/ops.md": "# Ops\n\ntext\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store() as store, store.transaction():
        cursor = json.dumps({"fp": "x", "head": None, "times": {f"docs/{token}/ops.md": 1}, "undated": []})
        store.record_sync("docs", cursor, 0, 0, 0, 0)
    assert holds(repo, token)
    if how == "forget":
        out = run_cli("-C", str(repo), "forget", token, "--yes").output
        assert "still in the database" not in out, out
    else:
        out = run_cli("-C", str(repo), "scrub").output
        assert "where docs got to" in out and "slack" in out, out
    assert holds(repo, token) == []
    run_cli("-C", str(repo), "sync", "--no-embed")  # the docs are read again, dated as before
    assert [i["title"] for i in query_json(repo, "ops text")["items"]][:1] == ["docs/ops.md — Ops"]


def plant_old_style(repo: Path, path: str, importer: str | None = None) -> str:
    """Store what a sync before path redaction kept for PATH in HEAD's commit (returned): its diff node's key,
    ref, title, file list and meta as read (set after the node was made, past the guard that now redacts
    them), and PATH in the import structure (imported by IMPORTER)."""
    from nexusmem import project
    from nexusmem.nodes import Node

    proj = project.load(repo)
    sha = git(repo, "rev-parse", "HEAD").strip()
    node = Node(
        project=proj.id,
        kind="code_diff",
        source="diff",
        natural_key=f"{sha}:old",
        ref=f"{sha}:old",
        title="old",
        body="+x = 1",
        ts=1_700_000_000_000,
        signal=0.5,
        group=sha,
    )
    node.natural_key = node.ref = f"{sha}:{path}"
    node.title = f"{path} @ {sha[:7]} — feat: keys"
    node.files = (path,)
    node.meta = {"path": path, "sha": sha}
    with proj.open_store() as store, store.transaction():
        store.upsert([node])
        store.save_import_files([(path, "0" * 40, [])], [])
        if importer is not None:
            store.change_import_edges([(importer, path)], [])
    return sha


def test_scrub_redacts_the_file_names_and_imports_an_older_sync_kept(repo: Path, isolated_home: Path) -> None:
    """A sync before file names were redacted kept `keys/AKIA….py` as it was: in a diff's key, ref, title and
    meta, in the commit's file list and in the import structure. scrub redacts the nodes' fields and paths,
    drops the import structure, and the next sync builds it again without the secret."""
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    leaky = f"keys/{secret}.py"
    commit(repo, "feat: keys", {leaky: "x = 1\n", "app.py": f"from keys import {secret}\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, secret) == []  # today's sync keeps no secret in a name
    plant_old_style(repo, leaky, importer="app.py")
    assert holds(repo, secret)
    dry = run_cli("-C", str(repo), "scrub", "--dry-run").output
    assert "would redact 1 of" in dry and "1 file path(s)" in dry and "import structure" in dry
    assert holds(repo, secret)
    out = run_cli("-C", str(repo), "scrub").output
    assert "redacted 1 of" in out and "aws-key" in out
    assert holds(repo, secret) == []
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store(readonly=True) as store:
        assert store.import_edge_count() == 0  # dropped: the next sync reads the files again
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, secret) == []
    with proj.open_store(readonly=True) as store:
        assert ("app.py", "keys/«redacted:aws-key».py") in store.import_edges()


def test_scrub_reads_a_stored_path_as_a_path(repo: Path, isolated_home: Path) -> None:
    """`DD-API-KEY: 40c3….py` is a header only at a line's start and ends at the extension: read as plain
    text inside a path, no rule sees it. scrub reads stored paths folder by folder, as a sync does."""
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    value = "40c36b8a8e36e4acf1395b2529b97bd5"
    leaky = f"keys/DD-API-KEY: {value}.py"
    sha = plant_old_style(repo, leaky)
    assert holds(repo, value)
    out = run_cli("-C", str(repo), "scrub").output
    assert (
        "redacted 1 of" in out and "1 file path(s)" in out and "import structure" in out and "api-key" in out
    )
    assert holds(repo, value) == []
    items = query_json(repo, "DD-API-KEY")["items"]
    assert [i["ref"] for i in items if i["ref"].startswith(sha)] == [
        f"{sha}:keys/DD-API-KEY: «redacted:api-key».py"
    ]


@pytest.mark.slow
def test_forget_as_a_real_process(repo: Path, isolated_home: Path) -> None:
    leaky_repo(repo, isolated_home)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    done = run_script("forget", VALUE, "--yes", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert holds(repo, VALUE) == []
    usage = run_script("forget", cwd=repo)
    assert usage.returncode == 2


def test_a_value_in_a_file_name_leaves_the_import_structure_for_good(repo: Path, isolated_home: Path) -> None:
    # The value is a file's name: it sits in the import structure's paths and specifiers as well as in nodes.
    commit(repo, "init", {"util.js": "module.exports = 1\n"})
    commit(
        repo,
        "use helper",
        {"zorro7719helper.js": "module.exports = 2\n", "util.js": "const z = require('./zorro7719helper')\n"},
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, "zorro7719helper")
    out = run_cli("-C", str(repo), "forget", "zorro7719helper", "--yes").output
    assert "verified: the value is in none" in out and "WARNING" not in out, out
    assert holds(repo, "zorro7719helper") == []
    # the next syncs' structure pass reads the files again through the deny-list
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    assert holds(repo, "zorro7719helper") == []
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        assert "util.js" in store.import_blobs()  # the rest of the structure is back


def test_a_regex_or_imported_entry_clears_the_change_words_too(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    commit(repo, "init", {"util.js": "module.exports = 1\n"})
    commit(repo, "add api client", {"api.js": "const api = 'https://vault9.skunkworks-internal.net/v1'\n"})
    git(tmp_path, "clone", "-q", str(repo), str(tmp_path / "clone"))
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert "add api client" in [it["title"] for it in query_json(repo, "skunkworks")["items"]]
    out = run_cli("-C", str(repo), "forget", "--regex", r"skunkworks-internal\.[a-z]+", "--yes").output
    assert "change words" in out
    assert query_json(repo, "skunkworks")["items"] == []  # at once, not only after the next sync
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert query_json(repo, "skunkworks")["items"] == []
    assert [it["title"] for it in query_json(repo, "vault9")["items"]] == []
    # an imported entry holds only a hash: the words go the same way
    export = tmp_path / "deny.json"
    run_cli("-C", str(repo), "forget", "orcapass4417zz", "--yes")
    run_cli("-C", str(repo), "forget", "--export", str(export))
    clone = tmp_path / "clone"
    commit(clone, "add pw lookup", {"pw.js": "const pw = lookup('orcapass4417zz')\n"})
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert "add pw lookup" in [it["title"] for it in query_json(clone, "orcapass4417zz")["items"]]
    run_cli("-C", str(clone), "forget", "--import", str(export), "--yes")
    assert query_json(clone, "orcapass4417zz")["items"] == []
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert query_json(clone, "orcapass4417zz")["items"] == []
    assert holds(clone, "orcapass4417zz") == []


@pytest.mark.parametrize("ignore_case", [False, True])
def test_a_value_inside_a_longer_name_leaves_the_change_words_in_every_case(
    repo: Path, isolated_home: Path, ignore_case: bool
) -> None:
    """Change words are the diff's identifiers lower-cased: `def run_kelT8vqalong_name()` left
    `run_kelt8vqalong_name` in the commit's words after `forget kelT8vqa --yes` (only whole words were looked
    for), `query kelt8vqalong` still found the commit, and the read-back, comparing exact bytes, said
    "verified"; with --ignore-case it said "WARNING: still in" and no sync cleared them."""
    commit(repo, "init", {"a.py": "x = 1\n"})
    commit(repo, "add runner", {"b.py": "def run_kelT8vqalong_name(): pass\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert "add runner" in [it["title"] for it in query_json(repo, "kelt8vqalong")["items"]]
    flags = ["--ignore-case"] if ignore_case else []
    out = run_cli("-C", str(repo), "forget", "kelT8vqa", *flags, "--yes").output
    assert "verified: the value is in none" in out and "WARNING" not in out, out
    from nexusmem import project

    for args in (["sync", "--no-embed"], ["sync", "--rebuild", "--no-embed"], None):
        with project.load(repo).open_store(readonly=True) as store:
            assert [w for _seq, w in store.word_texts() if "kelt8vqa" in w] == [], args
        assert query_json(repo, "kelt8vqalong")["items"] == [], args
        assert holds(repo, "kelt8vqa") == [] and holds(repo, "kelT8vqa") == [], args
        if args is not None:
            run_cli("-C", str(repo), *args)
    # the commit itself stays: its own text never held the value
    assert [it["title"] for it in query_json(repo, "runner")["items"]] == ["add runner"]


def test_the_read_back_finds_a_lower_cased_copy_in_the_change_words(repo: Path, isolated_home: Path) -> None:
    """The read-back compared exact bytes only: a lower-cased copy (change words, the word indexes' terms)
    passed as "verified"."""
    commit(repo, "init", {"a.py": "x = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    from nexusmem import project

    with project.load(repo).open_store() as store, store.transaction():
        # what a sync would derive from a diff that is not in memory (older than the diff window)
        store.conn.execute("UPDATE nodes SET words = 'run_kelt8vqalong_name' WHERE kind = 'git_commit'")
    data = json.loads(run_cli("-C", str(repo), "forget", "kelT8vqa", "--yes", "--json").stdout)
    assert data["verified_absent"] is True and data["words_cleared"] == 1, data
    from nexusmem.hygiene.forget import _lowered_in

    with project.load(repo).open_store() as store:
        with store.transaction():
            store.conn.execute("UPDATE nodes SET words = 'run_kelt8vqalong_name' WHERE kind = 'git_commit'")
        assert _lowered_in(store, "kelT8vqa") == [
            "memory.db: nodes (change words, lower-cased)",
            "memory.db: nodes_fts (a term holding it, lower-cased)",  # the words' terms
        ]
        assert _lowered_in(store, "vqalong_nam") == ["memory.db: nodes (change words, lower-cased)"]
        assert _lowered_in(store, "zebracorn") == []


def test_import_into_a_clone_with_no_memory_yet_keeps_its_first_sync_clean(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """`forget --import deny.json` in a fresh clone failed with "has no NexusMem memory yet: run `nexusmem
    sync`" (exit 1), and following that advice stored the value before the deny-list was there. The import
    now sets the memory up as `init` does and records the entries, so the first sync already drops it."""
    commit(repo, "init", {"util.js": "module.exports = 1\n"})
    commit(repo, "add pw lookup", {"pw.js": "const pw = lookup('orcapass4417zz')\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", "orcapass4417zz", "--yes")
    export = tmp_path / "deny.json"
    run_cli("-C", str(repo), "forget", "--export", str(export))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    state = clone / ".nexusmem"

    out = run_cli("-C", str(clone), "forget", "--import", str(export)).output  # a dry run makes nothing
    assert "deny-list: would add 1 entr(ies)" in out and "no memory yet" in out, out
    assert not state.exists()
    out = run_cli("-C", str(clone), "forget", "--import", str(export), "--yes").output
    assert "deny-list: 1 entr(ies) added" in out, out
    assert f"set up the memory of this repository ({state}," in out and "next `nexusmem sync`" in out, out
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in ("memory.db", "config.json"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600, name
    listed = json.loads(run_cli("-C", str(clone), "forget", "--list", "--json").stdout)["entries"]
    assert [e["scope"] for e in listed] == ["project"]

    data = json.loads(run_cli("-C", str(clone), "sync", "--no-embed", "--json").stdout)
    assert sum(s["denied"] for s in data["sources"]) == 1, data["sources"]  # the diff holding it
    assert query_json(clone, "orcapass4417zz")["items"] == []
    assert holds(clone, "orcapass4417zz") == []
    assert "add pw lookup" in [it["title"] for it in query_json(clone, "lookup")["items"]]
    # run again, the entry is known: nothing more is set up
    out = run_cli("-C", str(clone), "forget", "--import", str(export), "--yes").output
    assert "1 entr(ies) already on it" in out and "set up" not in out, out


def test_forget_reaches_the_change_words_of_a_scrub_backup(repo: Path, isolated_home: Path) -> None:
    commit(repo, "init", {"util.js": "module.exports = 1\n"})
    commit(repo, "add pw lookup", {"pw.js": "const pw = lookup('orcapass4417zz')\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store() as store, store.transaction():  # what an older release stored: scrub's work
        store.upsert([shell_node(f"echo {secret}", 1_700_000_000_000, project=proj.id, key="old")])
    run_cli("-C", str(repo), "scrub")
    (backup,) = (repo / ".nexusmem").glob("memory.db.pre-scrub-*.bak")
    assert b"orcapass4417zz" in backup.read_bytes()
    out = run_cli("-C", str(repo), "forget", "orcapass4417zz", "--yes").output
    assert "also removed from 1 scrub backup(s)" in out and "verified" in out, out
    assert b"orcapass4417zz" not in backup.read_bytes()


def test_forget_names_the_table_that_still_holds_the_value(repo: Path, isolated_home: Path) -> None:
    commit(repo, "feat: v1", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    from nexusmem import project

    with project.load(repo).open_store() as store, store.transaction():
        # a table forget does not clean (made up: a bookkeeping record holding the value)
        store.set_meta("made.up.record", "v1-Zebracorn-Quux-4417")
    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert "WARNING: the value is still in the database files:" in out
    assert "  - memory.db: meta" in out and "another process" not in out, out
    data = json.loads(run_cli("-C", str(repo), "forget", VALUE, "--yes", "--json").stdout)
    assert data["verified_absent"] is False and data["still_in"] == ["memory.db: meta"]


def test_a_value_in_a_tag_or_a_doc_file_name_stays_forgotten(repo: Path, isolated_home: Path) -> None:
    """A version tag named after the value stayed in the releases table for good (no sync read the tags
    through the deny-list), and a doc file named after it came back in the docs source's cursor at the next
    sync, although forget had said the value was gone."""
    commit(repo, "docs", {"docs/zorblax-setup.md": "# Setup\n\nInstall.\n", "a.txt": "a\n"})
    git(repo, "tag", "zorblax-2.0.0")
    git(repo, "tag", "v1.0.0")
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert holds(repo, "zorblax")
    out = run_cli("-C", str(repo), "forget", "zorblax", "--yes").output
    assert "verified: the value is in none" in out and "WARNING" not in out, out
    for args in (["sync", "--no-embed"], ["sync", "--rebuild", "--no-embed"]):
        commit(repo, f"more {args[-2]}", {"a.txt": f"{args}\n"})
        run_cli("-C", str(repo), *args)
        assert holds(repo, "zorblax") == [], args
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        assert store.release_names() == ["v1.0.0"]  # the other tags are read as before


def test_an_export_onto_a_folder_or_a_device_is_refused(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """`forget --export DIR` was an internal error (exit 3: the rename onto a folder), and a FIFO or a link to
    /dev/zero in the export's place was replaced without a word."""
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", "hunter2hunter2", "--yes")
    folder = run_cli("-C", str(repo), "forget", "--export", str(tmp_path), ok=False)
    assert folder.exit_code == 1 and f"{tmp_path} is a folder" in folder.output, folder.output
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    device = run_cli("-C", str(repo), "forget", "--export", str(fifo), ok=False)
    assert (
        device.exit_code == 1
        and "is not a regular file" in device.output
        and stat.S_ISFIFO(fifo.stat().st_mode)
    )
    ok = run_cli("-C", str(repo), "forget", "--export", str(tmp_path / "deny.json"))
    assert ok.exit_code == 0 and (tmp_path / "deny.json").is_file()


def test_the_name_of_a_stored_field_is_not_a_value_to_forget(repo: Path, isolated_home: Path) -> None:
    """`forget author` matched the names of the fields stored with each node, not only their values: it
    deleted every commit (each commit's meta has an `author` key) and every shell command, blanked every
    log line holding a `pipestatus` field, and its entry then kept them all out of every later sync; the
    read-back then said the word was "still in the database files" (it is, as a field's name)."""
    base = int(time.time()) - 3 * 86_400
    commit(repo, "feat: parse quoted values", {"parse.py": "QUOTE = '\"'\n"}, when=base)
    commit(repo, "fix: keep the trailing newline", {"parse.py": "QUOTE = '\"'\nNL = 1\n"}, when=base + 60)
    ms = base * 1000
    timed = {**json.loads(log_line(repo, "make test", ms + 1000)), "pipestatus": [0], "duration_ms": 1200}
    # Another writer's line may carry an object keyed by what it records (variable names): those keys are
    # content, and still matched.
    env = {**json.loads(log_line(repo, "make lint", ms + 2000)), "env": {"ZEBRACORN_QUUX_4417": "1"}}
    append_log(isolated_home, json.dumps(timed) + "\n", json.dumps(env) + "\n")
    run_cli("-C", str(repo), "sync", "--no-embed")
    counts = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"]
    assert counts["git_commit"] == 2 and counts["shell_command"] == 2, counts
    log_before = log_path(isolated_home).read_bytes()

    for args in (["author"], ["insertions"], ["pipestatus"], ["--regex", "^(sha|parents|cwd)$"]):
        out = run_cli("-C", str(repo), "forget", *args, "--yes").output
        assert "deleted 0 node(s)" in out and "removed 0 shell-log line(s)" in out, (args, out)
        assert "WARNING" not in out, (args, out)
        if args[0] != "--regex":
            assert "verified: the value is in nothing" in out, (args, out)
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"] == counts
    assert log_path(isolated_home).read_bytes() == log_before
    # The entries' gate keeps letting the commits and the commands in.
    data = json.loads(run_cli("-C", str(repo), "sync", "--rebuild", "--json").stdout)
    assert all(s["denied"] == 0 for s in data["sources"]), data["sources"]
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"] == counts

    out = run_cli("-C", str(repo), "forget", "ZEBRACORN_QUUX_4417", "--yes").output
    assert "removed 1 shell-log line(s)" in out, out
    assert b"ZEBRACORN_QUUX_4417" not in log_path(isolated_home).read_bytes()


def test_a_commit_a_rebase_dropped_leaves_the_database_files_with_its_sync(repo: Path) -> None:
    """A commit dropped to get rid of a leaked value (`git rebase --onto`), then a sync: `query` no longer
    answered it, but its text stayed in memory.db's bytes (the deleted row's cells, the older copies of the
    row the first sync's updates left) and in the WAL an open reader (an MCP server) kept; only `forget`
    erased it. The prune zeroes what it deletes and truncates the WAL."""
    import sqlean

    commit(repo, "feat: base", {"a.py": "0\n"})
    commit(repo, "wip: temporary", {"leak.py": f'vault_phrase = "{VALUE}"\n'})
    commit(repo, "feat: more", {"a.py": "1\n"})
    run_cli("-C", str(repo), "sync")
    assert holds(repo, VALUE) == ["memory.db"]
    reader = sqlean.connect(str(repo / ".nexusmem" / "memory.db"))  # idle, as a server's between queries
    try:
        assert reader.execute("SELECT count(*) FROM nodes").fetchone()[0] > 0
        git(repo, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")
        out = run_cli("-C", str(repo), "sync").output
        assert "git +1 -2" in out, out
        assert query_json(repo, VALUE)["items"] == []
        assert holds(repo, VALUE) == []
    finally:
        reader.close()


@pytest.mark.slow
def test_nexusmems_own_words_are_not_a_value_to_forget(repo: Path, isolated_home: Path) -> None:
    """`forget human --yes` deleted every typed command (`author_kind: human` in each one's meta), `forget bash`
    (`shell`) blanked every log line, `forget exit` and `forget pipestatus` matched the "(exit 1)" and
    "[cwd … · exit 1 · pipestatus 1|0 · bash]" NexusMem writes around each command; their entries then refused
    every later command ("shell unchanged (1 denied)"). The command and its folder are still matched."""
    commit(repo, "feat: app", {"app.py": "raise SystemExit(2)\n"})
    typed_in_bash(repo, "python3 app.py", "python3 app.py | cat", "echo zorblax-token")
    run_cli("-C", str(repo), "sync", "--no-embed")
    counts = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"]
    assert counts["shell_command"] == 4, counts
    log_before = log_path(isolated_home).read_bytes()

    for value in ("human", "bash", "exit", "pipestatus", "cwd"):  # --force: "cwd" is under 4 characters
        out = run_cli("-C", str(repo), "forget", value, "--yes", "--force").output
        assert "deleted 0 node(s)" in out and "removed 0 shell-log line(s)" in out, (value, out)
        assert "verified: the value is in nothing" in out and "NexusMem's own words" in out, (value, out)
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"] == counts
    assert log_path(isolated_home).read_bytes() == log_before

    # The entries' gate lets the next failing command in; precheck warns of the failures.
    typed_in_bash(repo, "python3 app.py --again", "mkdir sub-zorp", "cd sub-zorp", "ls")
    data = json.loads(run_cli("-C", str(repo), "sync", "--no-embed", "--json").stdout)
    assert all(s["denied"] == 0 for s in data["sources"]), data["sources"]
    assert "python3 app.py --again" in shell_refs(repo)
    from nexusmem import precheck

    assert [f.kind for f in precheck.run(repo, files=["app.py"]).findings][:1] == ["failure"]

    # What a command records is matched as before: its text, and the folder it ran in (`ls` and the last
    # `true`, in sub-zorp).
    out = run_cli("-C", str(repo), "forget", "zorblax-token", "--yes").output
    assert "deleted 1 node(s): 1 shell_command; removed 1 shell-log line(s)" in out, out
    assert "verified: the value is in none" in out, out
    out = run_cli("-C", str(repo), "forget", "sub-zorp", "--yes").output
    assert "deleted 4 node(s): 4 shell_command; removed 4 shell-log line(s)" in out, out
    assert "verified: the value is in none" in out, out


@pytest.mark.slow
def test_forget_global_run_in_several_projects_at_once_keeps_every_entry(
    isolated_home: Path, tmp_path: Path
) -> None:
    """Eight `forget --global` at once, in four projects, on a machine with no deny-list key yet: each made
    its own key and the last write won, so a project's entry was keyed with a key the file no longer held
    (every later sync of it failed), and each read the user-wide list, added its entry and wrote it back, so
    entries were lost though every one printed success. The key is made, and the list changed, under a lock."""
    import subprocess

    from helpers import console_script

    repos = []
    for n in range(4):
        r = tmp_path / f"r{n}"
        r.mkdir()
        git(r, "init", "-q", "-b", "main")
        commit(r, f"feat: project {n}", {"x.txt": f"{n}\n"})
        assert run_script("sync", "--no-embed", cwd=r).returncode == 0
        repos.append(r)
    assert not (isolated_home / ".nexusmem" / "deny-key.json").exists()
    values = [f"Quokka-Secret-{n}-{VALUE}" for n in range(8)]
    procs = [
        subprocess.Popen(
            [console_script(), "forget", value, "--global", "--yes"],
            cwd=repos[n % len(repos)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n, value in enumerate(values)
    ]
    outs = [(p.communicate(timeout=120)[0], p.returncode) for p in procs]
    for out, code in outs:
        assert code == 0, out
    keys = json.loads((isolated_home / ".nexusmem" / "deny-key.json").read_text(encoding="utf-8"))
    assert len(keys["keys"]) == 1, keys  # one key for the user, not one per process
    deny = json.loads((isolated_home / ".nexusmem" / "deny-list.json").read_text(encoding="utf-8"))
    assert len(deny["entries"]) == len(values)
    from nexusmem.hygiene.denylist import load_global

    kept = load_global()
    assert all(any(e.is_value(v) for e in kept) for v in values)
    for r in repos:
        done = run_script("sync", "--no-embed", cwd=r)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_who_ran_a_command_is_not_a_value_to_forget(repo: Path, isolated_home: Path) -> None:
    """`forget me --yes` deleted every command typed at the keyboard (each one's meta says `author: me`),
    `forget claude-code` every command of Claude Code's hook and its log lines, and `forget gemini` every
    Gemini turn and command (`agent`/`author`: gemini); their entries then refused every later command
    ("shell unchanged (1 denied)"). Those names are NexusMem's; a commit's author (a person's name and
    email) and a turn's model are what was recorded, and are still matched."""
    from datetime import datetime, timedelta, timezone

    from helpers import transcripts as T

    commit(repo, "feat: app", {"app.py": "raise SystemExit(2)\n"})
    git(repo, "-c", "user.name=Quillon Vasquez", "commit", "-q", "--allow-empty", "-m", "chore: touch")
    typed_in_bash(repo, "python3 app.py", "python3 app.py | cat")
    agent = json.loads(log_line(repo, "pytest -q", int(time.time() * 1000) - 60_000, exit_code=1))
    append_log(isolated_home, json.dumps({**agent, "author": "claude-code", "author_kind": "agent"}) + "\n")
    T.write_gemini(isolated_home / ".gemini", repo, datetime.now(timezone.utc) - timedelta(hours=3))
    run_cli("-C", str(repo), "sync", "--no-embed", "--conversation")
    counts = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"]
    assert counts["shell_command"] >= 4 and counts["conversation_turn"] >= 1, counts
    log_before = log_path(isolated_home).read_bytes()

    for value in ("me", "claude-code"):  # --force: "me" is under 4 characters
        out = run_cli("-C", str(repo), "forget", value, "--yes", "--force").output
        assert "deleted 0 node(s)" in out and "removed 0 shell-log line(s)" in out, (value, out)
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"] == counts
    # Gemini's command stays; its turn goes by what the transcript recorded: its model, "gemini-2.5-pro".
    out = run_cli("-C", str(repo), "forget", "gemini", "--yes").output
    assert "deleted 1 node(s): 1 conversation_turn; removed 0 shell-log line(s)" in out, out
    after = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"]
    assert after["shell_command"] == counts["shell_command"], after
    assert log_path(isolated_home).read_bytes() == log_before

    typed_in_bash(repo, "python3 app.py --again")
    data = json.loads(run_cli("-C", str(repo), "sync", "--no-embed", "--json").stdout)
    assert all(s["denied"] == 0 for s in data["sources"]), data["sources"]
    assert "python3 app.py --again" in shell_refs(repo)

    # A commit's author is what the commit recorded.
    out = run_cli("-C", str(repo), "forget", "Quillon Vasquez", "--yes").output
    assert "deleted 1 node(s): 1 git_commit" in out, out


def test_a_value_too_short_or_too_broad_is_refused_without_force(repo: Path, isolated_home: Path) -> None:
    """`forget e --yes` deleted every node of a 5,248-node memory and deny-listed "e", so even `sync
    --rebuild` stored nothing again. A value under 4 characters, or one matching over a quarter of memory,
    is refused (the flag to insist is named), and nothing is deleted or deny-listed; the dry run still
    counts it."""
    for n in range(60):
        commit(repo, f"feat: add the widget number {n}", {f"w{n}.py": f"N = {n}\n"})
    commit(repo, "fix: the hunter2-zebra password leaked", {"leak.py": "X = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")

    def nodes() -> int:
        return int(json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["nodes"])

    before = nodes()
    short = run_script("forget", "e", "--yes", cwd=repo)
    assert short.returncode == 2 and "--force" in short.stderr, short.stderr
    dry = run_cli("-C", str(repo), "forget", "widget").output
    assert "--yes refuses it without --force" in dry, dry
    broad = run_script("forget", "widget", "--yes", cwd=repo)
    assert broad.returncode == 1 and "--force" in broad.stderr and "nodes in memory" in broad.stderr
    broad_regex = run_script("forget", "--regex", "[a-z]", "--yes", cwd=repo)
    assert broad_regex.returncode == 1 and "--force" in broad_regex.stderr, broad_regex.stderr
    assert nodes() == before
    assert "the deny-list is empty" in run_cli("-C", str(repo), "forget", "--list").output
    # A real secret still goes at once; with --force, a short value does too.
    assert "deleted 2 node(s)" in run_cli("-C", str(repo), "forget", "hunter2-zebra", "--yes").output
    out = run_cli("-C", str(repo), "forget", "w59", "--yes", "--force").output
    assert "deleted 2 node(s)" in out, out


def _sync_log(repo: Path, *older: str) -> tuple[Path, str]:
    """.nexusmem/auto-sync.log as the post-commit hook leaves it: OLDER lines (what an older release wrote),
    then a real `sync --auto`'s output; the log and that output."""
    commit(repo, "chore: more", {"b.txt": "b\n"})
    proc = run_script("sync", "--auto", cwd=repo)  # what the hook appends to .nexusmem/auto-sync.log
    assert proc.returncode == 0 and "sync run 1 done" in proc.stdout, proc.stderr
    log = repo / ".nexusmem" / "auto-sync.log"
    log.write_text("".join(line + "\n" for line in older) + proc.stdout, encoding="utf-8")
    log.chmod(0o600)
    return log, proc.stdout


def _failure_mark(repo: Path, text: str) -> tuple[Path, int]:
    """.nexusmem/auto-sync.failed holding TEXT, dated a day ago (its mtime is when the sync failed)."""
    mark = repo / ".nexusmem" / "auto-sync.failed"
    mark.write_text(text, encoding="utf-8")
    mark.chmod(0o600)
    when = int(time.time()) - 86_400
    os.utime(mark, (when, when))
    return mark, mark.stat().st_mtime_ns


def test_scrub_redacts_what_an_older_release_wrote_to_the_post_commit_sync_log(
    repo: Path, isolated_home: Path
) -> None:
    """README's "Where it breaks" said it: lines an older release wrote to .nexusmem/auto-sync.log kept the
    credential its project id held (lower-cased) until the user deleted that log, and a failure mark could hold
    one too; `scrub` cleaned only the store."""
    token = "ghp_" + "wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"
    password = "S3cr3t-Pa55w0rd-Xy"
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    held = f"github.com/acme/widget.git?access_token={token}".lower()
    old = (
        f"2026-01-02T03:04:05+00:00 pid 4242: git: this repository's id changed (it was moved, copied or given a"
        f" remote: {held} → github.com/acme/widget); its 3 node(s) now go by the new id, with their verdicts"
    )
    log, fresh = _sync_log(
        repo, "2026-01-02T03:04:04+00:00 pid 4242: sync run 1 done in 0.40s (+2 node(s))", old
    )
    mark, mtime = _failure_mark(
        repo, f"team store postgresql://nexus:{password}@db.internal:5432/team refused"
    )
    before = log.read_bytes(), mark.read_bytes()

    dry = run_cli("-C", str(repo), "scrub", "--dry-run").output
    assert "2 line(s) of the post-commit sync's log (.nexusmem/auto-sync.log and auto-sync.failed)" in dry, (
        dry
    )
    assert (log.read_bytes(), mark.read_bytes()) == before  # a dry run changes nothing

    out = run_cli("-C", str(repo), "scrub").output
    assert "2 line(s) of the post-commit sync's log" in out and "github-token" in out, out
    text = log.read_text(encoding="utf-8")
    assert token.lower() not in text.lower() and password not in mark.read_text(encoding="utf-8")
    assert "remote: github.com/acme/widget.git?access_token=«redacted:" in text, text
    # Every other line as it was, in its place; the failure's date and both files' mode kept.
    lines = text.splitlines()
    assert lines[0] == "2026-01-02T03:04:04+00:00 pid 4242: sync run 1 done in 0.40s (+2 node(s))"
    assert "\n".join(lines[2:]) + "\n" == fresh
    assert (
        mark.read_text(encoding="utf-8")
        == "team store postgresql://nexus:«redacted:password»@db.internal:5432/team refused"
    )
    assert mark.stat().st_mtime_ns == mtime
    for path in (log, mark):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p.name for p in log.parent.iterdir() if p.name.endswith(".tmp")]
    # Nothing left to do the second time.
    assert "post-commit sync's log" not in run_cli("-C", str(repo), "scrub").output


def test_forget_takes_the_value_out_of_the_post_commit_sync_log(repo: Path, isolated_home: Path) -> None:
    """`forget VALUE` said the value was gone while .nexusmem/auto-sync.log still held it (an older release
    wrote the project id there, lower-cased) and so could auto-sync.failed."""
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    log, fresh = _sync_log(
        repo,
        f"2026-01-02T03:04:05+00:00 pid 4242: git: this repository's id changed (… → {VALUE.lower()}/widget)",
        f"2026-01-02T03:04:06+00:00 pid 4243: Error: cannot reach {VALUE}.internal",
        "2026-01-02T03:04:07+00:00 pid 4244: sync run 1 done in 0.40s (+1 node(s))",
    )
    mark, mtime = _failure_mark(repo, f"cannot reach {VALUE}.internal")
    before = log.read_bytes(), mark.read_bytes()

    dry = run_cli("-C", str(repo), "forget", VALUE).output
    assert "would remove 3 line(s) holding it from .nexusmem/auto-sync.log and auto-sync.failed" in dry, dry
    assert (log.read_bytes(), mark.read_bytes()) == before

    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert "removed 3 line(s) holding it from .nexusmem/auto-sync.log and auto-sync.failed" in out, out
    assert VALUE.lower() not in log.read_text(encoding="utf-8").lower()
    assert log.read_text(encoding="utf-8") == (
        "2026-01-02T03:04:07+00:00 pid 4244: sync run 1 done in 0.40s (+1 node(s))\n" + fresh
    )
    # The failure is still said, with its date; its text is not.
    assert mark.read_text(encoding="utf-8") == "(its error held a value `nexusmem forget` took out)\n"
    assert mark.stat().st_mtime_ns == mtime
    for path in (log, mark):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_post_commit_sync_log_rewrite_keeps_its_cap_and_what_a_sync_appends_meanwhile(
    tmp_path: Path,
) -> None:
    """The rewrite forget and scrub make of .nexusmem/auto-sync.log: over 256 KB it is cut to its newest part
    as every auto sync cuts it; a line a sync appends while it runs is kept (and changed too); a link is not
    followed."""
    from nexusmem import autosync
    from nexusmem.redact import redact

    log = tmp_path / "auto-sync.log"
    body = "".join(
        f"2026-01-02T03:04:05+00:00 pid {i}: sync run 1 done in 0.40s (+1 node(s))\n" for i in range(5000)
    )
    log.write_text(f"export GITHUB_TOKEN=ghp_{'a1B2' * 9}\n" + body, encoding="utf-8")
    log.chmod(0o600)
    assert log.stat().st_size > autosync.LOG_CAP_BYTES
    appended = []

    def change(line: str) -> str:
        if not appended:  # a sync writes a line of its own as the rewrite reads
            with open(log, "a", encoding="utf-8") as late:
                late.write("late: PGPASSWORD=Kx9mQ2vLp8Zq7Lm4 psql\n")
            appended.append(True)
        return redact(line)

    assert autosync.rewrite_lines(log, change) == 2
    data = log.read_bytes()
    assert data.startswith(b"[log cut to its newest part]\n") and b"ghp_" not in data
    assert len(data) <= autosync.LOG_KEEP_BYTES + 200
    assert data.endswith(
        b"pid 4999: sync run 1 done in 0.40s (+1 node(s))\nlate: PGPASSWORD=\xc2\xabredacted:password\xc2\xbb psql\n"
    )
    assert stat.S_IMODE(log.stat().st_mode) == 0o600

    # A post-commit sync still running holds the log open with O_APPEND (its shell redirected it there):
    # what it writes after the rewrite lands in the same file, never in a file renamed away.
    held = tmp_path / "held.log"
    held.write_text("one: token=ghp_" + "a1B2" * 9 + "\ntwo: fine\n", encoding="utf-8")
    with open(held, "a", encoding="utf-8") as sync_output:
        assert autosync.rewrite_lines(held, redact) == 1
        sync_output.write("three: written by the sync after the rewrite\n")
    lines = held.read_text(encoding="utf-8").splitlines()
    assert lines[1:] == ["two: fine", "three: written by the sync after the rewrite"]
    assert "ghp_" not in lines[0] and lines[0].startswith("one: token=«redacted:")

    target = tmp_path / "elsewhere.log"
    target.write_text("token=ghp_" + "a1B2" * 9 + "\n", encoding="utf-8")
    link = tmp_path / "linked" / "auto-sync.log"
    link.parent.mkdir()
    link.symlink_to(target)
    assert autosync.rewrite_lines(link, redact) == 0
    assert "ghp_" in target.read_text(encoding="utf-8")


def test_a_log_line_with_a_lone_surrogate_stops_no_regex_forget(repo: Path, isolated_home: Path) -> None:
    r"""A shell-log line whose command holds a lone surrogate (`"echo \ud800"`, JSON-escaped) between lines
    holding the value: `forget --regex` crashed on it (exit 3, RE2 encodes text as strict UTF-8), after
    blanking the lines before it and leaving it and every line after it, the value with them; `--global`
    showed the entry in `--list` but never wrote the user-wide list."""
    commit(repo, "init", {"a.txt": "a\n"})
    ms = int(time.time() * 1000) - 60_000
    bad = json.dumps(json.loads(log_line(repo, "echo \\ud800", ms + 2)))
    assert "\\ud800" in bad  # escaped in the file, a lone surrogate once decoded
    append_log(
        isolated_home,
        log_line(repo, "ssh db-prod-7.internal", ms + 1),
        bad.replace('"echo \\\\ud800"', '"echo \\ud800"') + "\n",
        log_line(repo, "ssh db-prod-9.internal", ms + 3),
        log_line(repo, "make all", ms + 4),
    )
    assert "db-prod-9" in log_path(isolated_home).read_text(encoding="utf-8")
    run_cli("-C", str(repo), "sync", "--no-embed")
    done = run_script("forget", "--regex", "db-prod-[0-9]+", "--yes", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "deleted 2 node(s)" in done.stdout and "removed 2 shell-log line(s)" in done.stdout, done.stdout
    text = log_path(isolated_home).read_text(encoding="utf-8", errors="surrogatepass")
    kept = [line for line in text.splitlines() if line.strip()]
    assert "db-prod" not in text and len(kept) == 2, kept
    assert "\\ud800" in kept[0] and '"make all"' in kept[1]
    assert holds(repo, "db-prod-7") == holds(repo, "db-prod-9") == []  # the pattern itself is kept
    # The same with --global: the user-wide list gets the entry, and a later sync applies it.
    append_log(isolated_home, log_line(repo, "ssh db-stage-4.internal", ms + 5))
    done = run_script("forget", "--global", "--regex", "db-stage-[0-9]+", "--yes", cwd=repo)
    assert done.returncode == 0, done.stderr
    deny = json.loads((isolated_home / ".nexusmem" / "deny-list.json").read_text(encoding="utf-8"))
    assert [e["spec"]["pattern"] for e in deny["entries"]] == ["db-stage-[0-9]+"]
    assert "db-stage" not in log_path(isolated_home).read_text(encoding="utf-8", errors="surrogatepass")
    append_log(isolated_home, bad + "\n", log_line(repo, "ssh db-stage-5.internal", int(time.time() * 1000)))
    synced = run_script("sync", "--no-embed", cwd=repo)
    assert synced.returncode == 0, synced.stderr
    assert not [r for r in shell_refs(repo) if "db-" in r], shell_refs(repo)


def test_the_user_wide_entry_is_written_though_a_later_step_fails(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`forget --global --yes` recorded the entry in this project's store, then wrote the user-wide list
    last: a failure in between (the log's rewrite, the purge) left the entry in `forget --list` but out of
    every other project's sync."""
    leaky_repo(repo, isolated_home)
    run_cli("-C", str(repo), "sync", "--no-embed")
    from nexusmem.hygiene import forget

    def broken(entries: object, *, dry_run: bool, only_in: Path | None = None) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(forget, "scrub_log", broken)
    with pytest.raises(OSError):
        run_cli("-C", str(repo), "forget", VALUE, "--global", "--yes", ok=False)
    from nexusmem.hygiene.denylist import load_global

    assert [e.is_value(VALUE) for e in load_global()] == [True]


def test_a_forget_that_fails_on_a_log_line_leaves_the_log_as_it_was(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's rewrite wrote each line as it went: a line it failed on left the lines before it blanked
    and it and every line after it as they were, the value in them. Every line is now decided first."""
    leaky_repo(repo, isolated_home)
    original = log_path(isolated_home).read_bytes()
    from nexusmem.hygiene import denylist, forget

    matches = denylist.Entry.matches

    def fails_on_curl(self: denylist.Entry, text: str) -> bool:
        if text.startswith("curl"):
            raise UnicodeEncodeError("utf-8", text, 0, 1, "surrogates not allowed")
        return matches(self, text)

    monkeypatch.setattr(denylist.Entry, "matches", fails_on_curl)
    with pytest.raises(UnicodeEncodeError):
        forget.scrub_log([denylist.make_literal(VALUE, False)], dry_run=False)
    assert log_path(isolated_home).read_bytes() == original  # the ssh line before it was blanked


def test_forget_global_cleans_every_registered_projects_sync_log(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """`forget --global VALUE` cleaned only this project's .nexusmem/auto-sync.log and auto-sync.failed: another
    registered project's kept the value in plain text, and nothing said so. Now every registered project's
    logs it can reach lose those lines (counted), and those it cannot reach are named."""
    other = init_repo(tmp_path / "other")
    commit(other, "init other")
    run_cli("-C", str(other), "sync", "--no-embed")
    gone = init_repo(tmp_path / "gone")
    commit(gone, "init gone")
    run_cli("-C", str(gone), "sync", "--no-embed")
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    log, fresh = _sync_log(
        other,
        f"2026-01-02T03:04:06+00:00 pid 4243: Error: cannot reach {VALUE}.internal",
        "2026-01-02T03:04:07+00:00 pid 4244: sync run 1 done in 0.40s (+1 node(s))",
    )
    mark, mtime = _failure_mark(other, f"cannot reach {VALUE}.internal")
    before = log.read_bytes(), mark.read_bytes()
    shutil.rmtree(gone)  # registered, its folder gone (an unmounted drive): its logs cannot be reached

    dry = run_cli("-C", str(repo), "forget", VALUE, "--global").output
    assert "would remove 2 line(s) holding it from the post-commit sync logs of 1 other project(s)" in dry, (
        dry
    )
    assert (log.read_bytes(), mark.read_bytes()) == before

    out = run_cli("-C", str(repo), "forget", VALUE, "--global", "--yes").output
    assert "removed 2 line(s) holding it from the post-commit sync logs of 1 other project(s)" in out, out
    assert "could not reach the post-commit sync logs of 1 other registered project(s)" in out, out
    assert f"  - {gone}: " in out, out
    assert VALUE not in log.read_text(encoding="utf-8") and VALUE not in mark.read_text(encoding="utf-8")
    assert log.read_text(encoding="utf-8") == (
        "2026-01-02T03:04:07+00:00 pid 4244: sync run 1 done in 0.40s (+1 node(s))\n" + fresh
    )
    assert mark.stat().st_mtime_ns == mtime
    data = json.loads(run_cli("-C", str(repo), "forget", VALUE, "--global", "--yes", "--json").stdout)
    assert data["others_sync_log"] == 0 and [u.split(": ")[0] for u in data["others_unreached"]] == [
        str(gone)
    ]


def _crash_log(home: Path, *lines: str) -> tuple[Path, bytes]:
    """~/.nexusmem/crash.log as an unexpected error leaves it: a real report, then LINES (what an older
    release, or older redaction rules, let through); the log and that report's bytes."""
    from nexusmem import crashlog

    try:
        raise RuntimeError("the disk said no")
    except RuntimeError:
        crashlog.record("sync")
    path = home / ".nexusmem" / "crash.log"
    report = path.read_bytes()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    return path, report


def test_forget_takes_the_value_out_of_the_crash_log(repo: Path, isolated_home: Path) -> None:
    """A crash whose message held a value left it in ~/.nexusmem/crash.log, which `forget` did not read: the
    value stayed there in plain text after "verified". Its lines holding it are taken out now, counted."""
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    log, report = _crash_log(
        isolated_home,
        f"--- 2026-01-02T03:04:05Z nexusmem 0.1 (python 3.12, linux) command 'query {VALUE}'",
        f"ValueError: cannot parse {VALUE.lower()}.internal",
    )
    before = log.read_bytes()
    dry = run_cli("-C", str(repo), "forget", VALUE).output
    assert f"would remove 2 line(s) holding it from the crash log ({log})" in dry, dry
    assert log.read_bytes() == before
    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert f"removed 2 line(s) holding it from the crash log ({log})" in out, out
    assert log.read_bytes() == report  # the other report as it was
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    data = json.loads(run_cli("-C", str(repo), "forget", VALUE, "--yes", "--json").stdout)
    assert data["crash_log"] == 0


def test_scrub_redacts_the_crash_log(repo: Path, isolated_home: Path) -> None:
    """`scrub` brought memory up to today's rules but not ~/.nexusmem/crash.log, where a traceback written under
    older rules could hold a secret. Its lines are redacted in place now, counted."""
    token = "ghp_" + "wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"
    commit(repo, "init")
    run_cli("-C", str(repo), "sync", "--no-embed")
    log, report = _crash_log(isolated_home, f"RuntimeError: push to https://x:{token}@github.com refused")
    dry = run_cli("-C", str(repo), "scrub", "--dry-run").output
    assert f"1 line(s) of the crash log ({log})" in dry, dry
    assert token in log.read_text(encoding="utf-8")
    out = run_cli("-C", str(repo), "scrub").output
    assert f"1 line(s) of the crash log ({log})" in out, out
    text = log.read_text(encoding="utf-8")
    assert token not in text and "«redacted:" in text and text.startswith(report.decode("utf-8")), text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "crash log" not in run_cli("-C", str(repo), "scrub").output


def test_a_local_forget_names_the_team_store_without_contacting_it(repo: Path, isolated_home: Path) -> None:
    """With a team store configured, a forget without --team says the team store may hold what it deleted
    here and how to delete it there, from this memory's record of its pushes (none here): no connection is
    made (the URL's server does not exist); without a team store nothing is said."""
    commit(repo, "init", {"a.py": "x = 1\n"})
    commit(repo, "add the wombat8812key client", {"w.py": "KEY = 'wombat8812key'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    alone = json.loads(run_cli("-C", str(repo), "forget", "wombat8812key", "--json").output)
    assert alone["team_copies"] is None and alone["removed"] == 2
    assert "team store" not in run_cli("-C", str(repo), "forget", "wombat8812key").output
    config = repo / ".nexusmem" / "config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["team"]["url"] = "postgresql://nexus@db.invalid:5432/team"
    config.write_text(json.dumps(data), encoding="utf-8")
    dry = json.loads(run_cli("-C", str(repo), "forget", "wombat8812key", "--json").output)
    assert dry["team_copies"] == {"url": "postgresql://nexus@db.invalid:5432/team", "shared": 2, "pushed": 0}
    done = run_cli("-C", str(repo), "forget", "wombat8812key", "--yes").output
    assert (
        "team store postgresql://nexus@db.invalid:5432/team: no push from this memory had sent the deleted"
        " node(s), but another member's push of the same history may have; `nexusmem forget --team VALUE"
        " --yes` deletes them there"
    ) in done, done


@pytest.mark.parametrize(
    ("pattern", "spelled"),
    [
        (r"lib\.gamma\.example", "lib.gamma.example"),
        (r"Pa55\-w0rd\+x\$", "Pa55-w0rd+x$"),
        (r"C:\\tmp", "C:\\tmp"),
        ("Pa55w0rd-Blue-Falcon", "Pa55w0rd-Blue-Falcon"),
        (r"lib.gamma\.example", None),  # an unescaped dot is any character
        (r"host\d+", None),  # \d is a class, not a character
        (r"a\_b", None),  # an escaped word character is no literal in RE2
        ("tail\\", None),
    ],
)
def test_a_pattern_of_escaped_literal_characters_is_the_text_it_spells(
    pattern: str, spelled: str | None
) -> None:
    """`forget --regex 'lib\\.gamma\\.example'` (escaped dots: how people write a hostname) was kept as a
    plaintext pattern; only an unescaped literal became a keyed hash. Escapes of literal characters are no
    regex syntax: the pattern is the literal value it spells."""
    from nexusmem.hygiene.denylist import fixed_text

    assert fixed_text(pattern) == spelled


def test_a_regex_of_escaped_literal_characters_is_forgotten_as_the_value(repo: Path) -> None:
    """`forget --regex 'lib\\.gamma\\.example' --yes`: the value, a keyed hash (with the note), not the
    pattern as written."""
    commit(repo, "point at lib.gamma.example", {"conf.py": "HOST = 'lib.gamma.example'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    done = run_cli("-C", str(repo), "forget", "--regex", r"lib\.gamma\.example", "--yes").output
    assert "has no regex syntax" in done and "keeps its pattern" not in done, done
    listed = run_cli("-C", str(repo), "forget", "--list").output
    assert "value  17 byte(s)" in listed and "gamma" not in listed, listed
    assert query_json(repo, "gamma example")["items"] == []
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert query_json(repo, "gamma example")["items"] == []


def _claude_hook_fires(cwd: Path, command: str, call_id: str) -> None:
    """What Claude Code does after a Bash call in CWD: run the PostToolUse command `hook agent install` put in
    its settings (`sh -c`), the call's JSON on stdin."""
    import subprocess

    settings = json.loads(
        (Path(os.environ["HOME"]) / ".claude" / "settings.json").read_text(encoding="utf-8")
    )
    hook = next(
        h["command"]
        for g in settings["hooks"]["PostToolUse"]
        for h in g["hooks"]
        if "agenthook" in h["command"]
    )
    payload = {
        "session_id": "sess-b",
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "1", "stderr": "", "interrupted": False},
        "tool_use_id": call_id,
        "duration_ms": 12,
    }
    done = subprocess.run(
        ["sh", "-c", hook], input=json.dumps(payload).encode(), capture_output=True, timeout=30
    )
    assert (done.returncode, done.stderr) == (0, b"")


@pytest.mark.slow
def test_a_forget_without_global_leaves_another_projects_lines_in_the_shell_log(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """`forget VALUE --yes` (no --global) in project A blanked project B's lines holding VALUE in the log every
    project shares, at the forget and at A's next sync ("1 blanked"): B never got those commands. Now A's
    forget and A's syncs blank A's lines only; B's are read by B's own sync."""
    other = init_repo(tmp_path / "other")
    commit(repo, "init a", {"a.txt": "a\n"})
    commit(other, "init b", {"b.txt": "b\n"})
    run_cli("hook", "agent", "install", "claude-code")
    now = int(time.time() * 1000) - 60_000
    append_log(
        isolated_home,
        log_line(repo, f"ssh deploy@{VALUE}", now),
        log_line(other, f"dig +short {VALUE}", now + 1),
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert shell_refs(repo) == [f"ssh deploy@{VALUE}"]

    out = run_cli("-C", str(repo), "forget", VALUE, "--yes").output
    assert "1 shell-log line(s)" in out, out
    text = log_path(isolated_home).read_text(encoding="utf-8")
    assert f"ssh deploy@{VALUE}" not in text and f"dig +short {VALUE}" in text

    # An agent in B runs a command holding the value; a command in A holds it too.
    _claude_hook_fires(other, f"psql -h {VALUE} -c 'select 1'", "toolu_B1")
    append_log(isolated_home, log_line(repo, f"ping {VALUE}", int(time.time() * 1000)))
    out = run_cli("-C", str(repo), "sync", "--no-embed").output
    assert "0 line(s) rewritten with secrets redacted, 1 blanked" in out, out  # A's ping, not B's psql
    text = log_path(isolated_home).read_text(encoding="utf-8")
    assert f"ping {VALUE}" not in text and f"psql -h {VALUE}" in text and f"dig +short {VALUE}" in text
    assert holds(repo, VALUE) == [] and shell_refs(repo) == []

    run_cli("-C", str(other), "sync", "--no-embed")
    assert shell_refs(other) == [f"dig +short {VALUE}", f"psql -h {VALUE} -c 'select 1'"]

    # With --global, B's lines go too (every project's), and B's memory at its next sync.
    out = run_cli("-C", str(repo), "forget", VALUE, "--global", "--yes").output
    assert VALUE not in log_path(isolated_home).read_text(encoding="utf-8"), out
    run_cli("-C", str(other), "sync", "--no-embed")
    assert shell_refs(other) == [] and holds(other, VALUE) == []
