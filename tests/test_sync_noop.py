"""`nexusmem sync` with nothing (or little) to do: the click-free path, the sources that are off, the git
answers shared by the sources of one sync. Real repositories, the installed console script, real stores."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem import config, gitcmd
from nexusmem.paths import shell_log_path
from nexusmem.sources import registry

from helpers import commit, git, main_in_fresh_process, run_cli, run_script


def _seconds_out(text: str) -> str:
    return re.sub(r"\d+\.\d+s", "N.NNs", text)


def _without_seconds(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_seconds(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [_without_seconds(v) for v in data]
    return data


def _hook_line(repo: Path, command: str, code: int) -> None:
    line = {
        "ts": int(time.time() * 1000),
        "cwd": str(repo),
        "exit": code,
        "command": command,
        "shell": "bash",
    }
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**line, "session": "s1", "v": 1}) + "\n")


def test_registry_says_which_sources_run_as_each_source_does() -> None:
    """sync decides which sources run without importing them (registry.enabled): the same answer as each
    source's own `enabled`, for the defaults and for each switched on and off."""
    for name in registry.SOURCES:
        source = registry.get(name)
        for value in (None, True, False):
            cfg = config.defaults()
            if value is None:
                cfg["sources"].pop(name, None)
            else:
                cfg["sources"][name]["enabled"] = value
            assert registry.enabled(name, cfg) == source.enabled(cfg), (name, value)
    with pytest.raises(KeyError, match="unknown source 'nope'"):
        registry.enabled("nope", config.defaults())


def test_snapshot_asks_git_once_per_question(repo: Path) -> None:
    """Inside gitcmd.snapshot() a read-only question (HEAD, refs, index) is asked of git once; outside it,
    every time; a failed answer is never kept."""
    commit(repo, "one", {"a.txt": "1\n"})
    first = gitcmd.run(["show-ref", "--head"], repo)
    with gitcmd.snapshot():
        assert gitcmd.run(["show-ref", "--head"], repo) == first
        commit(repo, "two", {"a.txt": "2\n"})  # within one sync, one state of the repository
        assert gitcmd.run_ok(["show-ref", "--head"], repo) == (0, first)
        assert gitcmd.run(["rev-parse", "HEAD"], repo) != first[:40]  # not a shared question: asked again
    assert gitcmd.run(["show-ref", "--head"], repo) != first
    empty = repo.parent / "empty"
    git(repo.parent, "init", "-q", str(empty))
    with gitcmd.snapshot():
        assert gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], empty)[0] != 0
        commit(empty, "first", {"b.txt": "1\n"})
        assert gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], empty)[0] == 0


@pytest.mark.slow
def test_the_plain_sync_path_answers_as_the_click_command(repo: Path, tmp_path: Path) -> None:
    """The console script runs the common forms of `sync` without click: the same output and exit code as
    the click command (times aside); what only click answers stays click's."""
    commit(repo, "feat: start", {"README.md": "# Demo\n\nA demo.\n", "src/a.py": "x = 1\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_cli("-C", str(repo), "sync")
    forms: list[tuple[list[str], Path]] = [
        (["sync"], repo),
        (["sync", "-q"], repo),
        (["sync", "-v", "--no-embed"], repo / "src"),
        (["sync", "-C", str(repo), "--quiet"], elsewhere),
        (["-C", str(repo), "sync", "-q"], elsewhere),  # git-style, before the command
        (["sync"], elsewhere),  # not a repository: the same error
    ]
    for form, cwd in forms:
        plain = run_script(*form, cwd=cwd)
        clicked = run_cli(*form, cwd=cwd, ok=False)
        assert (plain.returncode, _seconds_out(plain.stdout), _seconds_out(plain.stderr)) == (
            clicked.exit_code,
            _seconds_out(clicked.stdout),
            _seconds_out(clicked.stderr),
        ), form
    plain_json = json.loads(run_script("sync", "--json", cwd=repo).stdout)
    click_json = json.loads(run_cli("sync", "--json", cwd=repo).stdout)
    assert _without_seconds(plain_json) == _without_seconds(click_json)
    assert "Usage:" in run_script("sync", "--help", cwd=repo).stdout
    assert run_script("sync", "--bogus", cwd=repo).returncode == 2
    assert run_script("sync", "extra", cwd=repo).returncode == 2
    outside = run_script("sync", cwd=elsewhere)
    assert outside.returncode == 1 and "is not inside a git repository" in outside.stderr


@pytest.mark.slow
def test_a_noop_sync_still_sees_a_new_commit_hook_line_and_doc_at_once(repo: Path) -> None:
    """The shortcuts of a sync with nothing to do (no git process for the root, shared git answers, sources
    that are off never loaded) never hide what is new: a commit, a hook line, a doc, each on the next sync."""
    commit(repo, "feat: start", {"README.md": "# Demo\n\nA demo.\n", "src/a.py": "x = 1\n"})
    first = run_script("sync", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert "unchanged" in run_script("sync", cwd=repo).stdout
    commit(repo, "fix(cache): keep the journal in WAL mode", {"src/a.py": "x = 2\n"})
    out = run_script("sync", cwd=repo).stdout
    assert "git +1" in out and "diff +1" in out
    _hook_line(repo, "pytest tests/test_a.py", 1)
    assert "shell +1" in run_script("sync", cwd=repo).stdout
    (repo / "docs").mkdir()
    (repo / "docs/guide.md").write_text("# Guide\n\nHow the cache journal works.\n", encoding="utf-8")
    assert "docs +1" in run_script("sync", cwd=repo).stdout  # untracked, not yet committed: still read
    found = run_script("query", "--json", "journal", "WAL", cwd=repo)
    titles = [item["title"] for item in json.loads(found.stdout)["items"]]
    assert "fix(cache): keep the journal in WAL mode" in titles and "docs/guide.md — Guide" in titles
    heavy = (
        "click",
        "nexusmem.sources.conversation.source",
        "nexusmem.sources.github.source",
        "nexusmem.sources.session",
        "nexusmem.sources.git.commits",
    )
    _, loaded = main_in_fresh_process(repo, ["sync", "-q"], heavy)
    assert loaded == []


def test_doc_globs_match_as_fnmatch_does() -> None:
    """The docs source matches its include/exclude globs with one regex per list: the same answers as
    fnmatchcase per pattern (the rule it replaces), name patterns at any depth, path patterns anywhere."""
    from fnmatch import fnmatchcase

    from nexusmem.sources.docs import _glob_match

    def by_fnmatch(path: str, patterns: list[str]) -> bool:
        lower, name = path.lower(), path.lower().rsplit("/", 1)[-1]
        for raw in patterns:
            pat = raw.lower().lstrip("/")
            if "/" in pat and (fnmatchcase(lower, pat) or fnmatchcase(lower, "*/" + pat)):
                return True
            if "/" not in pat and fnmatchcase(name, pat):
                return True
        return False

    lists = [
        ["*.md", "*.mdx", "*.markdown"],
        ["node_modules/*", "vendor/*", "/docs/*.MD", "CHANGELOG*", "*.min.*", "a[bc]?.md", "[!a]*.txt"],
        [],
    ]
    paths = ["README.md", "docs/guide.MD", "a/node_modules/x.md", "node_modules/y.md", "vendor/a/b.md",
             "x.txt", "ax.txt", "CHANGELOG.md", "docs/sub/notes.markdown", "abc.md", "acd.md", "Ünï.MD",
             "line\nbreak.md", "docs/x.min.md"]  # fmt: skip
    answers = [(_glob_match(p, pats), by_fnmatch(p, pats)) for pats in lists for p in paths]
    assert all(mine == theirs for mine, theirs in answers)
    assert sum(mine for mine, _ in answers) > 10  # the cases do match things
