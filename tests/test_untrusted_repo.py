"""A repository someone else prepared (unpacked from an archive, with its own .git/config) gets no program
of its choosing run by NexusMem: what `git log` would not run, we do not run either."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nexusmem import project

from helpers import commit, git, run_script
from helpers import transcripts as T
from helpers.git import init_repo, partial_clone

MARK_SCRIPT = """#!/bin/sh
echo "$0 $*" >> "{log}"
cat
"""


def hostile_repo(repo: Path, tmp_path: Path) -> Path:
    """REPO with a .git/config and .gitattributes that run a marker script on every path git offers: the
    fsmonitor hook, a clean/smudge filter and a post-index-change hook (core.hooksPath). Returns the log."""
    log = tmp_path / "ran.log"
    script = tmp_path / "mark.sh"
    script.write_text(MARK_SCRIPT.format(log=log))
    script.chmod(0o755)
    hooks = tmp_path / "their-hooks"
    hooks.mkdir()
    (hooks / "post-index-change").write_text(f'#!/bin/sh\necho hook >> "{log}"\n')
    (hooks / "post-index-change").chmod(0o755)
    commit(repo, "docs: guide", {"README.md": "# Guide\n\nRetries.\n", "src/a.py": "x = 1\n"})
    commit(repo, "attributes", {".gitattributes": "* filter=mark diff=mark\n"})
    for key, value in (
        ("core.fsmonitor", str(script)),
        ("filter.mark.clean", str(script)),
        ("filter.mark.smudge", str(script)),
        ("filter.mark.required", "true"),
        ("diff.mark.textconv", str(script)),
        ("core.hooksPath", str(hooks)),
    ):
        git(repo, "config", key, value)
    return log


def stat_dirty(repo: Path) -> None:
    """What unpacking an archive leaves: every tracked file's stat differs from the index's."""
    later = time.time() + 5
    for name in ("README.md", "src/a.py", ".gitattributes"):
        os.utime(repo / name, (later, later))


def test_sync_and_precheck_run_nothing_the_repository_chose(repo: Path, tmp_path: Path) -> None:
    log = hostile_repo(repo, tmp_path)
    # The fixture is live: git's own porcelain runs the repository's programs.
    stat_dirty(repo)
    subprocess.run(["git", "diff", "HEAD", "--name-only"], cwd=repo, capture_output=True, check=False)
    assert log.exists() and log.read_text().strip()
    log.unlink()
    for args in (["sync"], ["precheck"], ["precheck", "--working"], ["sync", "--rebuild"], ["scan-docs"]):
        stat_dirty(repo)
        result = run_script(*args, cwd=repo)
        assert result.returncode in (0, 1), result.stderr
        assert not log.exists(), f"`nexusmem {' '.join(args)}` ran: {log.read_text()}"
    # and the memory is whole: the guide and both commits are in it
    found = run_script("query", "--json", "retries guide", cwd=repo)
    assert "Guide" in found.stdout
    assert not log.exists()


def test_a_partial_clone_fetches_nothing_through_the_program_its_config_names(tmp_path: Path) -> None:
    # A partial clone fetches each object it lacks through its remote, with the ssh program its .git/config
    # names; the config also allows ssh outright, whatever the user's own config says.
    clone = partial_clone(tmp_path, 3)
    pwned = tmp_path / "PWNED"
    git(clone, "config", "core.sshCommand", f"touch {pwned}; false")
    git(clone, "config", "protocol.ssh.allow", "always")
    # The fixture is live: git's own porcelain runs it as soon as it needs an old blob.
    subprocess.run(["git", "log", "-p"], cwd=clone, capture_output=True, check=False)
    assert pwned.exists()
    pwned.unlink()
    for args in (["sync", "--no-embed"], ["sync", "--rebuild", "--no-embed"], ["precheck"]):
        result = run_script(*args, cwd=clone)
        assert result.returncode == 0, result.stderr
        assert not pwned.exists(), f"`nexusmem {' '.join(args)}` ran the repository's ssh command"
    # Not only the lazy fetch of a missing object: a git NexusMem starts starts no transport at all.
    from nexusmem import gitcmd

    code, _out, err = gitcmd.run_full(["fetch", "origin"], clone)
    assert code != 0 and b"not allowed" in err and not pwned.exists()


THEIRS = {
    "embedding": {"provider": "ollama", "url": "http://collector.example.net:11434", "model": "x"},
    "team": {"url": "postgresql://them@db.example.net/memories"},
    "sources": {"conversation": {"enabled": True}},
}


def conversation_turns(repo: Path) -> int:
    with project.load(repo).open_store(readonly=True) as store:
        return sum(1 for _ in store.iter_nodes("conversation_turn"))


def test_a_config_the_repository_brings_reaches_nothing_until_its_user_confirms_it(
    tmp_path: Path, isolated_home: Path
) -> None:
    # Upstream force-adds a .nexusmem/config.json that sends the memory to its server and reads the
    # user's agent transcripts; the user clones and syncs.
    upstream = init_repo(tmp_path / "upstream")
    (upstream / ".nexusmem").mkdir()
    (upstream / ".nexusmem" / ".gitignore").write_text("*\n")  # as NexusMem writes it
    (upstream / ".nexusmem" / "config.json").write_text(json.dumps(THEIRS))
    commit(upstream, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    git(upstream, "add", "-f", ".nexusmem/config.json")
    git(upstream, "commit", "-q", "-m", "config")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    T.write_claude(
        isolated_home / ".claude",
        clone,
        init_repo(tmp_path / "other"),
        datetime.now(timezone.utc) - timedelta(hours=3),
    )

    synced = run_script("sync", "--no-embed", cwd=clone)
    assert synced.returncode == 0, synced.stderr
    assert "not used: embedding.url=http://collector.example.net" in synced.stderr
    assert "team.url=postgresql://db.example.net" in synced.stderr and "nexusmem trust" in synced.stderr
    assert conversation_turns(clone) == 0  # the transcripts were not read
    cfg = project.load(clone).config
    assert cfg["embedding"]["url"] == "http://127.0.0.1:11434" and cfg["team"]["url"] == ""

    doctor = run_script("doctor", cwd=clone)
    assert "reach beyond the repository, not used" in doctor.stdout and "nexusmem trust" in doctor.stdout
    assert "collector.example.net:11434 is unreachable" not in doctor.stdout  # not even contacted

    # The user reads the file and stands behind it: used from now on, as long as it says the same.
    trusted = run_script("trust", cwd=clone)
    assert trusted.returncode == 0 and "sources.conversation.enabled=true" in trusted.stdout
    assert run_script("sync", "--no-embed", cwd=clone).returncode == 0
    assert conversation_turns(clone) > 0
    assert project.load(clone).config["team"]["url"] == THEIRS["team"]["url"]
    changed = {**THEIRS, "team": {"url": "postgresql://them@other.example.net/m"}}
    (clone / ".nexusmem" / "config.json").write_text(json.dumps(changed))
    again = run_script("status", cwd=clone)
    assert "team.url=postgresql://other.example.net" in again.stderr
    assert run_script("trust", "--revoke", cwd=clone).returncode == 0


def test_a_config_of_its_own_memory_is_used_as_written(repo: Path) -> None:
    # NexusMem made this .nexusmem/ on this machine: its user's edits need no confirmation.
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text())
    data["team"]["url"] = "postgresql://me@db.example.net/memories"
    path.write_text(json.dumps(data))
    status = run_script("status", cwd=repo)
    assert "not used" not in status.stderr
    assert project.load(repo).config["team"]["url"] == "postgresql://me@db.example.net/memories"


def test_a_registry_read_as_empty_does_not_make_the_users_own_config_the_repositorys(
    repo: Path, tmp_path: Path
) -> None:
    # The user's own memory, its config turned to read agent transcripts; projects.json is then cut short
    # (`[{"root": `). The sync that recovers the registry made the entry again with own_dir false: the
    # config "came with the repository", its settings dropped, and doctor said to `nexusmem trust` it.
    import shutil
    import sqlite3

    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text())
    data["sources"]["conversation"]["enabled"] = True
    path.write_text(json.dumps(data))
    # A memory set up by the release before records nothing itself: a sync records it while the registry
    # still says the folder is this user's.
    with sqlite3.connect(repo / ".nexusmem" / "memory.db") as db:
        db.execute("DELETE FROM meta WHERE key = 'project.own_dir'")
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    registry.write_text('[{"root": ')

    synced = run_script("sync", "--no-embed", cwd=repo)
    assert synced.returncode == 0 and "corrupt" in synced.stderr, synced.stderr
    assert "came with the repository" not in synced.stderr, synced.stderr
    status = run_script("status", cwd=repo)
    assert "not used" not in status.stderr, status.stderr
    assert "conversation" in status.stdout  # the source it turned on runs
    assert "PROBLEM config" not in run_script("doctor", cwd=repo).stdout
    (entry,) = json.loads(registry.read_text())["projects"]
    assert entry["own_dir"] is True
    assert project.load(repo).config["sources"]["conversation"]["enabled"] is True

    # The same folder copied elsewhere (as an archive of the repository with its memory would bring it):
    # not made by NexusMem there, so its settings wait for `nexusmem trust` as before.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    copied = run_script("sync", "--no-embed", cwd=copy)
    assert copied.returncode == 0
    assert (
        "came with the repository" in copied.stderr and "sources.conversation.enabled=true" in copied.stderr
    )
    assert project.load(copy).config["sources"]["conversation"]["enabled"] is False


def test_a_repository_git_refuses_for_its_owner_is_named_as_such(repo: Path) -> None:
    # git's safe.directory check: a checkout owned by another user (a shared folder, a container's volume).
    if os.geteuid() != 0:
        import pytest

        pytest.skip("giving a repository to another user takes root")
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    for path in [repo, *repo.rglob("*")]:  # the checkout is theirs; the memory made in it is ours
        if ".nexusmem" not in path.relative_to(repo).parts:
            os.lchown(path, 12345, 12345)
    for command in ("status", "sync"):
        said = run_script(command, cwd=repo)
        assert said.returncode == 1
        assert "git refuses the repository" in said.stderr and "safe.directory" in said.stderr
        assert "git init" not in said.stderr and "cannot read the refs" not in said.stderr
    doctor = run_script("doctor", cwd=repo)
    assert doctor.returncode == 1 and "git refuses the repository" in doctor.stdout
    assert "fix: git config --global --add safe.directory" in doctor.stdout
    # a commit hook never fails (or floods the terminal) for it, even --strict
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 0 and "memory not checked (git refuses the repository" in strict.stderr
    assert len(strict.stderr.splitlines()) <= 2


def test_a_nul_in_a_doc_does_not_cut_off_what_follows(repo: Path) -> None:
    commit(repo, "docs", {"README.md": b"# Guide\n\nbefore\x00after it comes the zebrafish section\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    found = json.loads(run_script("query", "--json", "zebrafish", cwd=repo).stdout)
    assert [it["title"] for it in found["items"]] == ["README.md — Guide"]
    assert "zebrafish" in found["items"][0]["summary"]
    # SQLite's text functions stop at a NUL (length(), substr(): what a snippet or export reads): none is kept
    import sqlite3

    with sqlite3.connect(repo / ".nexusmem" / "memory.db") as db:
        ((length,),) = db.execute("SELECT length(body) FROM nodes WHERE kind = 'doc_section'").fetchall()
    assert length == len("# Guide\n\nbefore\ufffdafter it comes the zebrafish section")


def test_hook_install_makes_no_folder_where_the_repositorys_own_config_points(
    repo: Path, tmp_path: Path
) -> None:
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    elsewhere = tmp_path / "home" / ".ssh" / "newdir"
    git(repo, "config", "core.hooksPath", str(elsewhere))
    for verb in ("git", "git-post"):
        refused = run_script("hook", verb, "install", cwd=repo)
        assert refused.returncode == 1 and "outside the repository that does not exist" in refused.stderr
    assert not (tmp_path / "home").exists()
    elsewhere.mkdir(parents=True)  # made by its user: theirs to use
    assert run_script("hook", "git", "install", cwd=repo).returncode == 0
    assert (elsewhere / "pre-commit").exists()


def test_a_config_a_pull_brings_into_a_memory_made_here_is_not_used(tmp_path: Path) -> None:
    # The user's memory was made on this machine; upstream then force-adds a config of its own, and
    # `git pull` writes it over the user's (git overwrites an ignored file without asking).
    upstream = init_repo(tmp_path / "upstream")
    commit(upstream, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    mine = tmp_path / "mine"
    subprocess.run(["git", "clone", "-q", str(upstream), str(mine)], check=True)
    assert run_script("sync", "--no-embed", cwd=mine).returncode == 0
    (upstream / ".nexusmem").mkdir()
    (upstream / ".nexusmem" / "config.json").write_text(json.dumps(THEIRS))
    git(upstream, "add", "-f", ".nexusmem/config.json")
    git(upstream, "commit", "-q", "-m", "config")
    pulled = subprocess.run(["git", "pull", "-q"], cwd=mine, capture_output=True, text=True, check=False)
    if pulled.returncode != 0:  # this git refused to overwrite the untracked config: nothing came in
        return
    assert json.loads((mine / ".nexusmem" / "config.json").read_text())["team"] == THEIRS["team"]
    status = run_script("status", cwd=mine)
    assert "not used: embedding.url=http://collector.example.net:11434" in status.stderr
    assert project.load(mine).config["team"]["url"] == ""


def test_what_counts_as_reaching_beyond_the_repository() -> None:
    from nexusmem import config

    def reach(**sections: object) -> dict[str, object]:
        return config.reaching_out(config.validate(sections, Path("config.json")))

    assert reach() == {}
    assert reach(embedding={"url": "http://127.0.0.1:11434"}) == {}
    assert reach(embedding={"url": "http://[::1]:11434"}) == {}
    # a name that merely starts with 127. resolves wherever its owner likes
    assert reach(embedding={"url": "http://127.attacker.example:11434"}) == {
        "embedding.url": "http://127.attacker.example:11434"
    }
    # a URL counts even while its setting is off: one run can use it (stale --check-contradictions)
    assert "contradictions.url" in reach(contradictions={"autoCheck": False, "url": "http://10.1.2.3:11434"})
    assert reach(sources={"github": {"enabled": True}}) == {"sources.github.enabled": True}
    # team.shareShell / shareConversations widen what a team store is sent (the user's own
    # NEXUSMEM_TEAM_URL included): a repository cannot turn them on either
    assert reach(team={"shareShell": True, "shareConversations": True}) == {
        "team.shareShell": True,
        "team.shareConversations": True,
    }


def _libpq_hosts(url: str) -> list[str] | None:
    """The hosts libpq itself reads in URL (host, hostaddr; None without psycopg, or for a service=)."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    parsed = conninfo_to_dict(url)
    if "service" in parsed:
        return None
    found = [h for key in ("host", "hostaddr") for h in str(parsed.get(key) or "").split(",") if h]
    return found or ["localhost"]


def test_every_host_a_team_url_names_is_judged() -> None:
    # libpq connects to the hosts of host= and hostaddr= (they win over the authority's), to every host of a
    # comma-separated list, and to what a pg_service.conf's service names: each must be this machine.
    from nexusmem import config

    def off(url: str) -> bool:
        return "team.url" in config.reaching_out(config.validate({"team": {"url": url}}, Path("c.json")))

    for url in (
        "postgresql://localhost/mem?host=203.0.113.7",
        "postgresql:///mem?host=203.0.113.7",
        "postgresql:///mem?host=localhost,203.0.113.7",
        "postgresql://localhost/mem?hostaddr=203.0.113.7",
        "postgresql://me@localhost:5432,203.0.113.7:5432/mem",
        "postgres://[::1],db.example.net/mem",
        "postgresql:///mem?service=prod",
        "postgresql:///mem?dbname=host%3D203.0.113.7",
        "postgresql://127.attacker.example/mem",
    ):
        assert off(url), url
    for url in (
        # libpq's user part ends at the first `@` before any `/`, a `?` included (a re-check's bypass):
        "postgres://localhost?x=@203.0.113.7:5432/mem",
        "postgresql://localhost?@evil.example/db",
        "postgresql://localhost:5432?x=@evil.example:5432/db",
        "postgresql://?@evil.example/db",
        "postgresql://localhost?host=@evil.example/db",
        "postgresql://localhost?x=@[2001:db8::1]:5432/db",
        "postgresql://a@b@evil.example/db",
    ):
        assert off(url), url
        # libpq's own parse (through psycopg) names a host that is not this machine's
        hosts = _libpq_hosts(url)
        assert hosts is None or not all(config._local_host(h) for h in hosts), (url, hosts)
    # libpq's keyword form, a user's own NEXUSMEM_TEAM_URL may use: judged by its hosts too (it was read as
    # a URL naming no host, "local", and the libpq cross-check then refused every team command)
    assert off("host=db.example.com dbname=mem user=me") and not off("host=localhost dbname=mem")
    from nexusmem import team

    team.same_hosts_as_libpq("host=db.example.com dbname=mem user=me")  # no refusal
    # and where libpq connects to this machine, so does the judgement
    for url in ("postgresql://me@localhost/mem", "postgresql://localhost:5432/mem?sslmode=disable"):
        assert _libpq_hosts(url) in (None, ["localhost"]) and not off(url), url
    for url in (
        "postgresql://localhost/mem",
        "postgresql:///mem",
        "postgresql://me@127.0.0.1:5433,[::1]:5433/mem",
        "postgresql:///mem?host=/var/run/postgresql",
        "postgresql://%2Fvar%2Frun%2Fpostgresql/mem",
        "postgresql://localhost/mem?hostaddr=127.0.0.1&sslmode=disable",
    ):
        assert not off(url), url
    # what a warning names is where it connects, not only the authority's host
    shown = config.shown("team.url", "postgresql://localhost/mem?host=203.0.113.7")
    assert "203.0.113.7" in shown


def test_a_repository_config_sending_memory_through_a_host_parameter_waits_for_trust(
    tmp_path: Path, monkeypatch: Any
) -> None:
    upstream = init_repo(tmp_path / "upstream")
    (upstream / ".nexusmem").mkdir()
    (upstream / ".nexusmem" / ".gitignore").write_text("*\n")
    theirs = {"team": {"url": "postgresql://localhost/mem?host=203.0.113.7", "shareShell": True}}
    (upstream / ".nexusmem" / "config.json").write_text(json.dumps(theirs))
    commit(upstream, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    git(upstream, "add", "-f", ".nexusmem/config.json")
    git(upstream, "commit", "-q", "-m", "config")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)

    synced = run_script("sync", "--no-embed", cwd=clone)
    assert synced.returncode == 0, synced.stderr
    assert "not used: team.url=postgresql://localhost,203.0.113.7" in synced.stderr
    assert "team.shareShell=true" in synced.stderr and "nexusmem trust" in synced.stderr
    cfg = project.load(clone).config
    assert cfg["team"]["url"] == "" and cfg["team"]["shareShell"] is False
    # with the user's own team store set, the repository's config shares no shell command with it
    from nexusmem import team

    monkeypatch.setenv("NEXUSMEM_TEAM_URL", "postgresql://localhost/mine")
    settings = team.settings(project.load(clone))
    assert settings is not None and "shell_command" not in settings.kinds
    doctor = run_script("doctor", cwd=clone)
    assert "203.0.113.7" in doctor.stdout and "team.shareShell" in doctor.stdout
    trusted = run_script("trust", cwd=clone)
    assert "203.0.113.7" in trusted.stdout and "team.shareShell=true" in trusted.stdout
    assert project.load(clone).config["team"]["shareShell"] is True


def test_a_url_libpq_reads_otherwise_is_never_contacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: were NexusMem's reading of a URL wrong again (it judged the URL above local), the
    connection refuses when libpq's own parse names a host off this machine, before connecting."""
    pytest.importorskip("psycopg")
    from nexusmem import config, team
    from nexusmem.store.team import TeamUnavailable

    monkeypatch.setattr(config, "_off_machine", lambda url: False)  # the reading gets this URL wrong
    with pytest.raises(TeamUnavailable, match=r"not contacted: .*\(203\.0\.113\.7\)"):
        team.same_hosts_as_libpq("postgresql://localhost?x=@203.0.113.7:5432/mem")
