"""Identity: one namespace per remote URL, stable content-addressed node ids."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
    ],
)
def test_an_ordinary_remote_keeps_its_id(url: str, expected: str) -> None:
    assert identity.normalise_url(url) == expected


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
