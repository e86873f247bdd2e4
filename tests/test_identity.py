"""Identity: one namespace per remote URL, stable content-addressed node ids."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem import identity

from helpers import commit, git, init_repo, run_cli


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://user:pw@github.com/acme/widget.git/",
        "ssh://git@github.com/acme/widget.git",
        "ssh://git@github.com:22/acme/widget",
        "git://github.com/Acme/widget/",
    ],
)
def test_normalise_url_gives_one_namespace(url: str) -> None:
    assert identity.normalise_url(url) == "github.com/acme/widget"


@pytest.mark.parametrize(
    "url",
    [
        "file:///srv/git/Widget.git",
        "/srv/git/Widget.git",
        "/srv/git/widget/",
        "file://localhost/srv/git/widget",
    ],
)
def test_an_origin_on_this_disk_is_one_project_however_its_url_is_written(url: str) -> None:
    """`git clone file:///srv/git/widget.git` and `git clone /srv/git/widget.git` made two project ids (the
    first kept `file://`, and so was sent to the team store as it was): two clones of one origin shared
    nothing."""
    assert identity.normalise_url(url) == "/srv/git/widget"


def test_node_id_is_stable_and_24_hex() -> None:
    a = identity.node_id("p", "git_commit", "abc")
    assert a == identity.node_id("p", "git_commit", "abc") and len(a) == 24
    assert a != identity.node_id("p", "code_diff", "abc") != identity.node_id("q", "git_commit", "abc")


@pytest.mark.parametrize(
    ("url", "expected"),
    [  # ids existing stores hold: unchanged
        ("git@gitlab.com:group/sub/proj.git", "gitlab.com/group/sub/proj"),
        ("ssh://git@host:2222/org/repo.git", "host/org/repo"),
        ("https://dev.azure.com/org/Project/_git/Repo", "dev.azure.com/org/project/_git/repo"),
        ("https://git.example.com/a%20b/c.git", "git.example.com/a%20b/c"),
        ("/srv/git/repo.git", "/srv/git/repo"),
        ("../relative/repo", "../relative/repo"),
        # what the release before (330b48f) gave these remotes: a `?`, `#` or "@" of an scp-style or path
        # remote is part of its id, and migration 17, scrub and projects.json writes leave it there
        ("git@github.com:torvalds/linux.git", "github.com/torvalds/linux"),
        ("https://org@dev.azure.com/org/Project/_git/Repo", "dev.azure.com/org/project/_git/repo"),
        ("git@ssh.dev.azure.com:v3/org/Project/Repo", "ssh.dev.azure.com/v3/org/project/repo"),
        ("git://git.savannah.gnu.org/emacs.git", "git.savannah.gnu.org/emacs"),
        ("git@git.sr.ht:~sircmpwn/git.sr.ht", "git.sr.ht/~sircmpwn/git.sr.ht"),
        ("gitea@git.example.com:Org/Repo.git", "git.example.com/org/repo"),
        # a file URL is the path it names (one origin, one id: a sync re-keys a memory made before)
        ("file:///srv/git/repo.git", "/srv/git/repo"),
        ("https://[::1]:8080/org/repo", "[::1]:8080/org/repo"),
        ("jane.doe@corp.com@git.corp.example:team/app.git", "corp.com@git.corp.example/team/app"),
        ("git@github.com:org/repo.git?ref=main", "github.com/org/repo.git?ref=main"),
        ("file:///srv/c#proj/up.git", "/srv/c#proj/up"),
        ("file:///srv/c#other/up.git", "/srv/c#other/up"),
        ("../a#b/repo", "../a#b/repo"),
        ("ext::ssh -i key git@host.example %S org/repo", "ext/:ssh -i key git@host.example %s org/repo"),
    ],
)
def test_an_ordinary_remote_keeps_its_id(url: str, expected: str) -> None:
    assert identity.normalise_url(url) == expected
    assert identity.clean_id(expected) == expected  # migration 17 leaves its memory as it is


_PART = st.one_of(
    st.text(alphabet="abcXYZ019-._~%@:?#;= /\\\n", max_size=12),
    st.sampled_from(
        [
            "ghp_" + "wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF",
            "AKIA" + "IOSFODNN7EXAMPLE",
            "access_token=a1b2c3d4e5",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["https://", "ssh://", "git://", "file://", "x://", "", "git@", "../", "/"]),
    _PART,
    st.sampled_from([":", "/", "@", "?", "#", ":/"]),
    _PART,
    st.sampled_from(["", ".git", "/", "?ref=main", "#frag", ".git?x=1"]),
)
def test_the_upgrade_never_re_keys_an_id_the_origin_url_gives(
    scheme: str, head: str, sep: str, tail: str, end: str
) -> None:
    """Whatever the URL's form, the id it gives is one migration 17, scrub and projects.json writes keep:
    before, an scp-style remote with an "@" in its user name, a `?` or `#`, or a path remote with a `#`, was
    re-keyed by the upgrade and back by the next sync, every time."""
    found = identity.normalise_url(f"{scheme}{head}{sep}{tail}{end}")
    assert identity.clean_id(found) == found


def test_a_memory_under_an_scp_remote_with_an_at_in_its_user_name_keeps_its_id(tmp_path: Path) -> None:
    """`jane.doe@corp.com@git.corp.example:team/app.git`: scrub said "re-keyed its N node(s)" every time, and
    each sync re-keyed the memory back, node ids changing twice a cycle."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", "jane.doe@corp.com@git.corp.example:team/app.git")
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    before = _held(repo)
    assert before[1] == "corp.com@git.corp.example/team/app"
    scrubbed = run_cli("-C", str(repo), "scrub").output
    assert "re-keyed" not in scrubbed
    _as_the_release_before_left_it(repo, before[1])
    run_cli("-C", str(repo), "status")
    synced = run_cli("-C", str(repo), "sync", "--no-embed").output
    assert _held(repo) == before and "id changed" not in synced
    registry = json.loads((Path(os.environ["NEXUSMEM_HOME"]) / "projects.json").read_text())
    assert registry["projects"][0]["id"] == before[1]


TOKEN = "ghp_" + "wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"https://github.com/acme/widget?access_token={TOKEN}", "github.com/acme/widget"),
        (f"https://github.com/acme/widget.git#{TOKEN}", "github.com/acme/widget"),
        ("https://me@corp.com:Sph2wJq5ty4mYw7@github.com/acme/widget", "github.com/acme/widget"),
        (f"https://git.example.com/{TOKEN}/app5", "git.example.com/«redacted:github-token»/app5"),
    ],
)
def test_a_credential_in_the_origin_url_is_no_part_of_the_id(url: str, expected: str, tmp_path: Path) -> None:
    """A token in the origin URL's query, fragment, user part or path became the project id (in lower
    case): in projects.json, memory.db, `status` and `status --share`, the summary meant for pasting."""
    assert identity.normalise_url(url) == expected
    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", url)
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    shown = run_cli("-C", str(repo), "status").output + run_cli("-C", str(repo), "status", "--share").output
    assert expected in shown
    files = [*(repo / ".nexusmem").glob("memory.db*"), *Path(os.environ["NEXUSMEM_HOME"]).rglob("*.json")]
    for secret in (TOKEN, "Sph2wJq5ty4mYw7"):
        assert secret.lower() not in shown.lower()
        assert not [f for f in files if secret.lower().encode() in f.read_bytes().lower()]


def _as_the_release_before_left_it(repo: Path, recorded: str) -> None:
    """REPO's memory and registry entry as a release before schema 17 left them: its nodes, its `project.id`
    and its projects.json entry under RECORDED, the id that release's rules gave the origin URL."""
    from nexusmem import project

    with project.load(repo).open_store() as store, store.transaction():
        store.rekey_project(recorded)
        store.set_meta("project.id", recorded)
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 17")
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    data = json.loads(registry.read_text())
    data["projects"][0]["id"] = recorded
    registry.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _held(repo: Path) -> tuple[list[tuple[str, str]], str | None, int]:
    """Every node's (id, project id), the recorded project id and the schema version, as the store has them."""
    conn = sqlite3.connect(repo / ".nexusmem" / "memory.db")
    try:
        rows = conn.execute("SELECT id, project_id FROM nodes ORDER BY seq").fetchall()
        meta = conn.execute("SELECT value FROM meta WHERE key = 'project.id'").fetchone()
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    finally:
        conn.close()
    return rows, meta[0] if meta else None, int(version)


def test_a_memory_whose_id_held_a_credential_is_re_keyed_by_the_upgrade_not_its_next_sync(
    tmp_path: Path,
) -> None:
    """A memory the release before made under an origin URL holding a token kept the token (memory.db,
    projects.json) until its next sync, and that release's post-commit hook, still on disk, wrote it back:
    nothing refused it, the schema was the same. The first command of this release (here `status`, which
    only reads) re-keys both, verdicts kept, and the store's schema is then newer than that release's."""
    from nexusmem.store import migrations

    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", f"https://github.com/acme/widget.git?access_token={TOKEN}")
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    head = json.loads(run_cli("-C", str(repo), "show", "HEAD", "--json").output)["id"]
    run_cli("-C", str(repo), "review", head, "--verify")
    clean = _held(repo)
    assert clean[1] == "github.com/acme/widget"
    _as_the_release_before_left_it(repo, f"github.com/acme/widget.git?access_token={TOKEN}".lower())
    home = Path(os.environ["NEXUSMEM_HOME"])
    files = [*(repo / ".nexusmem").glob("memory.db*"), home / "projects.json"]
    assert [f for f in files if TOKEN.lower().encode() in f.read_bytes().lower()]

    run_cli("-C", str(repo), "status")
    assert _held(repo) == (*clean[:2], migrations.LATEST) and migrations.LATEST >= 17
    files = [*(repo / ".nexusmem").glob("memory.db*"), home / "projects.json"]
    assert not [f for f in files if TOKEN.lower().encode() in f.read_bytes().lower()]
    assert json.loads(run_cli("-C", str(repo), "show", head, "--json").output)["trust"] == "verified"


def test_the_upgrade_leaves_a_memory_with_an_ordinary_id_as_it_is(tmp_path: Path) -> None:
    """Migration 17 changes nothing but the schema version of a memory whose id held no credential."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Widget.git")
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    before = _held(repo)
    assert before[1] == "github.com/acme/widget"
    _as_the_release_before_left_it(repo, "github.com/acme/widget")
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    listed = registry.read_bytes()
    run_cli("-C", str(repo), "status")
    assert _held(repo) == before
    assert registry.read_bytes() == listed


@pytest.mark.parametrize("first", ["doctor", "query --all-projects"])
def test_the_first_command_that_upgrades_the_memory_re_keys_projects_json_too(
    first: str, tmp_path: Path
) -> None:
    """`doctor` in the repository, or `query --all-projects` from another, was the first command of the new
    release: the store went to schema 17 with clean nodes, but projects.json kept the token for good (later
    opens migrate nothing) and doctor said "No problems found"."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", f"https://github.com/acme/widget.git?access_token={TOKEN}")
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    other = init_repo(tmp_path / "other")
    commit(other, "init", {"b.txt": "b\n"})
    run_cli("-C", str(other), "sync", "--no-embed")
    _as_the_release_before_left_it(repo, f"github.com/acme/widget.git?access_token={TOKEN}".lower())
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    assert TOKEN.lower() in registry.read_text()

    if first == "doctor":
        run_cli("-C", str(repo), "doctor", ok=False)
    else:
        run_cli("-C", str(other), "query", "--all-projects", "--", "init")
    assert _held(repo)[1] == "github.com/acme/widget"
    assert TOKEN.lower() not in registry.read_text().lower()


def test_doctor_names_a_registry_entry_whose_id_holds_a_credential(tmp_path: Path) -> None:
    """An entry the upgrade of its memory did not clean (written back after it): doctor names the project and
    the fix, never the id (it holds the credential)."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", f"https://github.com/acme/widget.git?access_token={TOKEN}")
    commit(repo, "init", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    registry = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    data = json.loads(registry.read_text())
    data["projects"][0]["id"] = f"github.com/acme/widget.git?access_token={TOKEN}".lower()
    registry.write_text(json.dumps(data))

    out = run_cli("-C", str(repo), "doctor", ok=False).output
    assert f"registered project {repo.resolve()}: its id holds a credential of the origin URL" in out
    assert f"nexusmem -C {repo.resolve()} scrub" in out
    assert TOKEN.lower() not in out.lower()
    run_cli("-C", str(repo), "scrub")
    assert TOKEN.lower() not in registry.read_text().lower()
    assert "holds a credential" not in run_cli("-C", str(repo), "doctor", ok=False).output
