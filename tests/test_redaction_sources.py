"""Every source that writes nodes redacts before the store: the corpus secrets through a real `nexusmem sync`.

Each case plants every secret of tests/fixtures/redaction_corpus.json through one channel -- the shell hooks'
log, a shell history file, commit subjects, a commit body, committed file content (diffs), Markdown prose,
inline code and fenced code, commit authors' names, file names (and the imports that name them), the
folders commands ran in -- into a real git repository with HOME and NEXUSMEM_HOME in temp dirs, runs
`nexusmem sync`, and greps the raw bytes of every file under `.nexusmem/` (memory.db, -wal, -shm, anything
else) and under NEXUSMEM_HOME except the hook log itself. Canary words planted next to the secrets must be
found, so a channel that stored nothing (or truncated its text) cannot pass by accident.

The hook log is the input here, written by the test; rewriting it after sync belongs to the log's own tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import commit, git, run_cli
from helpers.cli import console_script

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS: dict[str, Any] = json.loads((FIXTURES / "redaction_corpus.json").read_text(encoding="utf-8"))
SECRETS: list[dict[str, str]] = CORPUS["secrets"]
PLACED = [row["context"].replace("{s}", row["value"]) for row in SECRETS]
CHUNK = 25  # secrets per commit/file/section: well under every size limit (maxBodyChars 20,000)


def needles(value: str) -> list[str]:
    """What must not be stored: the value, and each line of a multi-line value (a PEM body line)."""
    parts = [value]
    for piece in re.split(r"\n|\\n", value):
        if len(piece) >= 16 and piece != value and "-----" not in piece:
            parts.append(piece)
    return parts


def chunks() -> list[list[str]]:
    return [PLACED[i : i + CHUNK] for i in range(0, len(PLACED), CHUNK)]


def canary(channel: str, i: int) -> str:
    return f"canary{channel.replace('-', '')}{i}zq"


def hook_log(repo: Path) -> list[str]:
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    base = 1_700_000_000_000
    with log.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(PLACED):
            record = {"ts": base + i, "cwd": str(repo), "exit": 0, "command": text, "shell": "bash", "v": 1}
            fh.write(json.dumps(record) + "\n")
        fh.write(
            json.dumps(
                {"ts": base + 10**6, "cwd": str(repo), "exit": 0, "command": f"echo {canary('log', 0)}"}
            )
        )
        fh.write("\n")
    return [canary("log", 0)]


def history_file(repo: Path) -> list[str]:
    """~/.bash_history with HISTTIMEFORMAT stamps, so multi-line commands stay one entry."""
    lines = []
    for i, text in enumerate([*PLACED, f"echo {canary('history', 0)}"]):
        lines += [f"#{1_700_000_000 + i}", text]
    (Path.home() / ".bash_history").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [canary("history", 0)]


def fast_import(repo: Path, commits: list[tuple[str, str | None]]) -> None:
    """Write COMMITS ((message, author name or None), oldest first) onto main with git fast-import."""
    stream = []
    for i, (text, author) in enumerate(commits):
        message = text.encode()
        who = f"author {author} <dev@example.com> {1_700_000_000 + i} +0000\n" if author is not None else ""
        stream.append(
            b"commit refs/heads/main\n"
            + who.encode()
            + f"committer Test User <test@example.com> {1_700_000_000 + i} +0000\n".encode()
            + f"data {len(message)}\n".encode()
            + message
            + b"\n"
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(stream), check=True)
    git(repo, "reset", "-q", "--hard", "main")


def commit_subjects(repo: Path) -> list[str]:
    """One commit per secret (its context as the message), written with git fast-import."""
    fast_import(repo, [(text, None) for text in [*PLACED, f"chore: {canary('subject', 0)}"]])
    return [canary("subject", 0)]


def commit_bodies(repo: Path) -> list[str]:
    marks = []
    for i, chunk in enumerate(chunks()):
        marks.append(canary("body", i))
        commit(repo, f"chore: rotate credentials, batch {i}\n\n" + "\n".join(chunk) + f"\n\n{marks[-1]}\n")
    return marks


def committed_files(repo: Path) -> list[str]:
    commit(repo, "chore: start", {"README.txt": "start\n"})
    files, marks = {}, []
    for i, chunk in enumerate(chunks()):
        marks.append(canary("file", i))
        files[f"config/leaky_{i:02d}.env"] = "\n".join(chunk) + f"\n# {marks[-1]}\n"
    commit(repo, "chore: add environment files", files)
    return marks


def markdown(style: str) -> Callable[[Path], list[str]]:
    def plant(repo: Path) -> list[str]:
        parts, marks = ["# Runbook\n"], []
        for i, chunk in enumerate(chunks()):
            marks.append(canary(f"md{style}", i))
            parts.append(f"\n## Step {i}\n\nSee {marks[-1]} first.\n")
            if style == "prose":
                parts.extend(f"\nThe old value was {text} until Monday.\n" for text in chunk)
            elif style == "inline":
                parts.extend(f"\n- run `{text}` once\n" for text in chunk)
            else:
                parts.append("\n```bash\n" + "\n".join(chunk) + "\n```\n")
        commit(repo, "docs: runbook", {"docs/runbook.md": "".join(parts)})
        return marks

    return plant


def authors(repo: Path) -> list[str]:
    """One commit per secret, with the secret in its context as the author's name (fast-import; a name
    holds no < > or newline, so those are left out)."""
    names = [text for text in PLACED if not set(text) & set("<>\n") and "\\n" not in text]
    fast_import(repo, [(f"chore: {i}", name) for i, name in enumerate([*names, canary("author", 0)])])
    return [canary("author", 0)]


def _path_safe(value: str) -> bool:
    parts = value.split("/")
    return (
        not set(value) & set("\n\0\\")
        and len(value.encode()) <= 200
        and all(part not in ("", ".", "..") and not part.startswith("-") for part in parts)
    )


def file_names(repo: Path) -> list[str]:
    """A Python module named after each secret in its context that can be a path, and a module importing
    those that are identifiers: the names reach the commit's file list, its diffs' keys and titles, and the import
    structure's paths and specifiers."""
    mark = canary("path", 0)
    values = [text for text in PLACED if _path_safe(text)] + [mark]
    for start in range(0, len(values), 15):  # a commit's message lists its first 20 files: each is listed
        commit(
            repo,
            f"feat: modules {start}",
            {f"pkg/{value}.py": "x = 1\n" for value in values[start : start + 15]},
        )
    names = [value for value in values if value.isidentifier()]
    commit(repo, "feat: the app", {"app.py": "".join(f"from pkg import {name}\n" for name in names)})
    return [mark]


def doc_names(repo: Path) -> list[str]:
    """A Markdown doc in a folder named after each secret in its context: the doc's sections' keys and
    titles, and the docs source's cursor (each doc's last commit time, by path)."""
    mark = canary("docpath", 0)
    values = [text for text in PLACED if _path_safe(text)] + [mark]
    commit(
        repo,
        "docs: guides",
        {f"docs/{value}/guide.md": f"# Guide\n\nStep {i}.\n" for i, value in enumerate(values)},
    )
    return [mark]


def working_folders(repo: Path) -> list[str]:
    """Hook log lines run in a folder of the repository named after each secret in its context."""
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    base = 1_700_000_000_000
    folders = [text for text in PLACED if _path_safe(text)] + [canary("cwd", 0)]
    with log.open("w", encoding="utf-8") as fh:
        for i, folder in enumerate(folders):
            record = {
                "ts": base + i,
                "cwd": str(repo / "work" / folder),
                "exit": 0,
                "command": "make",
                "v": 1,
            }
            fh.write(json.dumps({**record, "shell": "bash"}) + "\n")
    return [canary("cwd", 0)]


CHANNELS: dict[str, Callable[[Path], list[str]]] = {
    "shell-hook-log": hook_log,
    "shell-history-file": history_file,
    "commit-subject": commit_subjects,
    "commit-body": commit_bodies,
    "committed-file-diff": committed_files,
    "markdown-prose": markdown("prose"),
    "markdown-inline-code": markdown("inline"),
    "markdown-fenced-code": markdown("fenced"),
    "commit-author": authors,
    "file-name": file_names,
    "doc-folder-name": doc_names,
    "shell-working-folder": working_folders,
}


def stored_bytes(repo: Path) -> dict[Path, bytes]:
    """Every file the sync may have written: all of .nexusmem/ and NEXUSMEM_HOME (the hook log excepted)."""
    home = Path(os.environ["NEXUSMEM_HOME"])
    files = [p for p in (repo / ".nexusmem").rglob("*") if p.is_file()]
    files += [p for p in home.rglob("*") if p.is_file() and p.name != "shell-history.jsonl"]
    return {p: p.read_bytes() for p in files}


def stored_blob(repo: Path) -> bytes:
    """The bytes of every file stored_bytes reads, joined: what a secret must be absent from."""
    return b"\n".join(stored_bytes(repo).values())


def synced_blob(repo: Path) -> bytes:
    """`nexusmem sync` of REPO (no embedding), then stored_blob: what the store holds after it."""
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    return stored_blob(repo)


def assert_stored_as(raw: bytes, gone: list[str], kept: list[str]) -> None:
    """RAW (stored_blob) holds none of GONE and every one of KEPT, each named when it fails."""
    for secret in gone:
        assert secret.encode() not in raw, secret
    for text in kept:
        assert text.encode() in raw, text


def assert_query_finds(repo: Path, question: str, title: str) -> None:
    """`nexusmem query QUESTION` lists an item titled TITLE: redaction left what finds it in place."""
    from helpers import query_json

    titles = [item.get("title", "") for item in query_json(repo, question)["items"]]
    assert title in titles, titles


@pytest.mark.slow
@pytest.mark.parametrize("channel", list(CHANNELS))
def test_no_corpus_secret_reaches_the_store(repo: Path, channel: str) -> None:
    if channel.startswith("shell"):
        commit(repo, "chore: start", {"a.txt": "a\n"})
    marks = CHANNELS[channel](repo)
    run_cli("-C", str(repo), "sync", "-q")
    files = stored_bytes(repo)
    assert any(p.name == "memory.db" for p in files)
    raw = b"\n".join(files.values())
    for mark in marks:
        assert mark.encode() in raw, f"{channel}: canary {mark} was not stored: the channel ingested nothing"
    leaked = [
        (row["type"], needle) for row in SECRETS for needle in needles(row["value"]) if needle.encode() in raw
    ]
    assert not leaked, f"{channel}: {len(leaked)} secret(s) stored: {leaked[:5]}"
    assert b"\xc2\xabredacted:" in raw  # the placeholders, UTF-8 encoded, are what is stored instead


# A token each source keeps to a length: its text is cut at a limit, and a token the cut ended (`ghp_` and
# 35 of its 36 characters) no longer matches its pattern. Each case places the token across its limit.
CUT_TOKEN = "ghp_rkao4aLWMPJIs8wKmzhxvh1oMTdBWdRNEhjl"


def _github_comment(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A comment is kept to its first 4,000 characters (github.source.MAX_COMMENT_CHARS)."""
    from helpers import fake_gh

    git(repo, "remote", "add", "origin", "git@github.com:acme/widget.git")
    data, bin_dir = tmp_path / "gh-data", tmp_path / "bin"
    fake_gh.install(bin_dir, data)
    for key, value in fake_gh.env_for(bin_dir, data).items():
        monkeypatch.setenv(key, value)
    mark = canary("gh", 0)
    issue = fake_gh.issue(12, f"Clone fails {mark}", "It hangs.", "2026-11-02T10:00:00Z", comments=1)
    fake_gh.record(data, "repos/acme/widget/issues", [issue])
    text = "x" * (4000 - 39 - 12) + " clone with " + CUT_TOKEN + " done"  # the cut leaves 39 of its 40
    fake_gh.record(
        data, "repos/acme/widget/issues/12/comments", [fake_gh.comment("alice", text, "2026-11-01")]
    )
    return [mark]


def _changelog_entry(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A changelog entry is kept to its first 4,000 characters (changelog.MAX_ENTRY_CHARS)."""
    mark = canary("changelog", 0)
    head = f"- Faster clones {mark} "
    entry = head + "y" * (4000 - 39 - 12 - len(head)) + " clone with " + CUT_TOKEN + " done (#3)\n"
    commit(repo, "docs: changelog for 0.2.0", {"CHANGELOG.md": f"# Changelog\n\n## 0.2.0\n\n{entry}"})
    return [mark]


CUT_CHANNELS: dict[str, Callable[[Path, Path, pytest.MonkeyPatch], list[str]]] = {
    "github-comment": _github_comment,
    "changelog-entry": _changelog_entry,
}


@pytest.mark.slow
@pytest.mark.parametrize("channel", list(CUT_CHANNELS))
def test_a_token_a_length_limit_cuts_is_redacted_whole(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, channel: str
) -> None:
    """Each source redacts a text before it cuts it to its limit, never after: cut first, the token's first
    39 characters were stored (and shown, and missed by `forget`'s check)."""
    commit(repo, "chore: start", {"a.txt": "a\n"})
    marks = CUT_CHANNELS[channel](repo, tmp_path, monkeypatch)
    run_cli("-C", str(repo), "sync", "-q", "--no-embed", "--github")
    raw = stored_blob(repo)
    for mark in marks:
        assert mark.encode() in raw, f"{channel}: canary {mark} was not stored: the channel ingested nothing"
    assert CUT_TOKEN[4:24].encode() not in raw, f"{channel}: a cut token was stored"


def test_a_changelog_title_never_shows_half_a_placeholder(repo: Path) -> None:
    """A changelog entry's title is its first line cut to 120 characters, after redaction: a token where the
    cut falls showed as "… «red…", half a placeholder that reads as text. The cut leaves the placeholder out."""
    import sqlite3

    first = "- Fix the flaky clone " + "e" * 90 + " " + CUT_TOKEN + " (#3)\n"
    commit(repo, "docs: changelog", {"CHANGELOG.md": f"# Changelog\n\n## 1.0.0\n\n{first}"})
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    conn = sqlite3.connect(repo / ".nexusmem" / "memory.db")
    titles = [t for (t,) in conn.execute("SELECT title FROM nodes WHERE title LIKE '%Fix the flaky clone%'")]
    conn.close()
    assert titles and all(t.count("«") == t.count("»") for t in titles), titles


# Fake, real-shaped tokens (secrets.json of the walkthrough that found the leak).
GLUED_GITHUB = "ghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"
GLUED_PAT = "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"
GLUED_AWS = "AKIAQM4I2HZ4UEP3ENTH"
GLUED_SLACK = "xoxb-2048613795-4096271835-ZWD1IAEov4QbKDFq1Y3gqSmP"


def test_a_token_right_after_an_escape_never_reaches_the_store_or_the_log(repo: Path) -> None:
    """A letter or digit right before a token made it part of a longer word, so the token was kept: after a
    `\\n` or `\\t` escape (a JSON string, a printf format, a commit body written with `\\n`) or a URL-encoded
    `%3D` the token was stored in full, in the diff, the commit, the command's title and the hook log."""
    from helpers import typed_in_bash

    commit(repo, "chore: start", {"a.txt": "a\n"})
    commit(
        repo,
        "test: log fixture\n\nline\\n" + GLUED_PAT + "\ncanaryescbody",
        {"fixture.json": '{"log":"ok\\n' + GLUED_AWS + '", "note": "canaryescfile"}\n'},
    )
    typed_in_bash(
        repo,
        f'printf "user: ci\\n{GLUED_GITHUB} canaryescshell\\n" > /dev/null',
        f"echo 'token%3D{GLUED_SLACK}' > /dev/null",
    )
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    assert GLUED_GITHUB.encode() in log.read_bytes()  # the hook logged the command as typed
    raw = synced_blob(repo)
    for mark in ("canaryescbody", "canaryescfile", "canaryescshell"):
        assert mark.encode() in raw, mark
    stored = [token for token in (GLUED_GITHUB, GLUED_PAT, GLUED_AWS, GLUED_SLACK) if token.encode() in raw]
    assert not stored, stored
    kept = log.read_bytes()
    assert GLUED_GITHUB.encode() not in kept and GLUED_SLACK.encode() not in kept
    assert "user: ci\\\\n«redacted:github-token»".encode() in kept


def test_a_token_after_a_hex_unicode_octal_or_double_percent_escape_never_reaches_the_store(
    repo: Path,
) -> None:
    """Only `\\letter` and one `%XX` counted as an escape: a token after `\\x0a` or `\\u000a` in a committed
    JSON log, after `\\012` in a printf format, or after a twice URL-encoded `%253D` was stored in full."""
    from helpers import typed_in_bash

    commit(repo, "chore: start", {"a.txt": "a\n"})
    commit(
        repo,
        "test: callback fixture\n\nredirect=https%3A%2F%2Fh%2Fcb%253Ftoken%253D"
        + GLUED_PAT
        + "\ncanaryhexbody",
        {
            "fixture.json": '{"log":"ok\\x0a' + GLUED_AWS + '", "more":"ok\\u000a' + GLUED_GITHUB + '",'
            ' "note": "canaryhexfile"}\n'
        },
    )
    typed_in_bash(repo, f"printf 'a\\012{GLUED_SLACK} canaryhexshell' > /dev/null")
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    assert GLUED_SLACK.encode() in log.read_bytes()  # the hook logged the command as typed
    raw = synced_blob(repo)
    for mark in ("canaryhexbody", "canaryhexfile", "canaryhexshell"):
        assert mark.encode() in raw, mark
    stored = [token for token in (GLUED_GITHUB, GLUED_PAT, GLUED_AWS, GLUED_SLACK) if token.encode() in raw]
    assert not stored, stored
    kept = log.read_bytes()
    assert GLUED_SLACK.encode() not in kept
    assert "a\\\\012«redacted:slack-token»".encode() in kept


def _secret_yaml(key: list[str], mark: str) -> str:
    """A Kubernetes Secret holding KEY as a PEM block, indented under `tls.key: |` as YAML has it."""
    body = "".join(f"    {line}\n" for line in key)
    return (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls-{mark}\ntype: kubernetes.io/tls\nstringData:\n"
        f"  tls.key: |\n    -----BEGIN RSA PRIVATE KEY-----\n{body}    -----END RSA PRIVATE KEY-----\n"
    )


def test_an_indented_key_a_later_commit_edits_never_reaches_the_store(repo: Path) -> None:
    """A diff that changes five lines in the middle of an indented key shows none of its BEGIN or END lines:
    11 of the 20 base64 lines of the two keys were stored (an unindented server.key stored none)."""
    import base64
    import random

    rng = random.Random(7)

    def lines(n: int) -> list[str]:
        return [base64.b64encode(rng.randbytes(48)).decode() for _ in range(n)]

    key = lines(20)
    rotated = key[:7] + lines(5) + key[12:]
    commit(repo, "chore: add the tls secret", {"k8s/secret.yaml": _secret_yaml(key, "canarykeyone")})
    commit(repo, "chore: rotate the tls key", {"k8s/secret.yaml": _secret_yaml(rotated, "canarykeytwo")})
    raw = synced_blob(repo)
    assert b"canarykeyone" in raw and b"canarykeytwo" in raw  # both diffs were stored
    stored = [line for line in sorted(set(key + rotated)) if line.encode() in raw]
    assert not stored, f"{len(stored)} of {len(set(key + rotated))} key lines stored"


def test_a_bearer_token_or_a_session_cookie_in_a_header_never_reaches_the_store(repo: Path) -> None:
    """Only `Authorization:` and `*-Key`/`*-Token`/`*-Secret` headers were redacted: `Cookie: session=…`,
    `Auth: Bearer …` and a bare `-H "Bearer …"` typed in a hooked shell were stored as typed."""
    from helpers import typed_in_bash

    bearer, session = "UufJSunpJC01t5gobuszgI6hwgk1", "Kx9mQ2vLp8Zq7Lm4pWx9vT3b"
    commit(repo, "chore: start", {"a.txt": "a\n"})
    typed_in_bash(
        repo,
        f"curl -sH 'Cookie: lang=en; session={session}' http://127.0.0.1:9/canarycookie; true",
        f"curl -sH 'Auth: Bearer {bearer}' http://127.0.0.1:9/canaryauth; true",
        f'curl -sH "Bearer {bearer}" http://127.0.0.1:9/canarybare; true',
    )
    raw = synced_blob(repo)
    for mark in ("canarycookie", "canaryauth", "canarybare", "lang=en"):
        assert mark.encode() in raw, mark
    assert bearer.encode() not in raw and session.encode() not in raw
    log = (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").read_bytes()
    assert bearer.encode() not in log and session.encode() not in log
    assert "Cookie: lang=en; session=«redacted:cookie»".encode() in log


def test_a_session_cookie_given_with_curl_b_quoted_or_in_capitals_never_reaches_the_store(repo: Path) -> None:
    """Only `Cookie:` (that spelling), `--cookie` and an unquoted value were read: `curl -b 'sessionid=…'`
    (curl's short form), `COOKIE: sid=…` and `Cookie: session="…"` typed in a hooked shell were stored."""
    from helpers import typed_in_bash

    short, upper, quoted = (
        "8f14e45fceea167a5a36dedd4bea2543",
        "d41d8cd98f00b204e9800998ecf8427e",
        "Wq3Lm8Zx2Kp7Vt4Rn9Yb6Hc1",
    )
    commit(repo, "chore: start", {"a.txt": "a\n"})
    typed_in_bash(
        repo,
        f"curl -sb 'lang=en; sessionid={short}' http://127.0.0.1:9/canaryshort; true",
        f"curl -sH 'COOKIE: sid={upper}' http://127.0.0.1:9/canaryupper; true",
        f"curl -sH 'Cookie: session=\"{quoted}\"' http://127.0.0.1:9/canaryquoted; true",
        "git checkout -q -b canary-session-branch",
    )
    raw = synced_blob(repo)
    for mark in ("canaryshort", "canaryupper", "canaryquoted", "lang=en", "canary-session-branch"):
        assert mark.encode() in raw, mark
    stored = [value for value in (short, upper, quoted) if value.encode() in raw]
    assert not stored, stored
    log = (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").read_bytes()
    assert not [value for value in (short, upper, quoted) if value.encode() in log]
    assert "-sb 'lang=en; sessionid=«redacted:cookie»'".encode() in log


def test_a_session_cookie_in_a_header_spelled_in_mixed_case_never_reaches_the_store(repo: Path) -> None:
    """A header's name is case-insensitive, but only `Cookie` and `COOKIE` were read as a cookie header:
    `CoOkIe: session=…`, `cOOKIE: sid=…` and `Set-CoOkIe: sid=…` typed in a hooked shell were stored whole."""
    from helpers import typed_in_bash

    values = (
        "Kx9mQ2vLp8Zq7Lm4pWx9vT3b",
        "d41d8cd98f00b204e9800998ecf8427e",
        "R4nd0mS3ss10nIdFAKE9qZk3pW8vL2mQ7xT",
    )
    commit(repo, "chore: start", {"a.txt": "a\n"})
    typed_in_bash(
        repo,
        f"curl -sH 'CoOkIe: lang=en; session={values[0]}' http://127.0.0.1:9/canarymixed; true",
        f"curl -sH 'cOOKIE: sid={values[1]}' http://127.0.0.1:9/canarylower; true",
        f"echo 'Set-CoOkIe: sid={values[2]}; Path=/; HttpOnly' # canaryset",
    )
    raw = synced_blob(repo)
    for mark in ("canarymixed", "canarylower", "canaryset", "CoOkIe: lang=en; session=«redacted:cookie»"):
        assert mark.encode() in raw, mark
    assert "Set-CoOkIe: sid=«redacted:cookie»; Path=/; HttpOnly".encode() in raw
    assert not [value for value in values if value.encode() in raw]
    log = (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").read_bytes()
    assert not [value for value in values if value.encode() in log]


def test_a_class_name_a_date_a_version_after_bearer_and_an_analytics_cookie_are_kept(repo: Path) -> None:
    """The Bearer and cookie rules took a CamelCase class name, a timestamp or a version after `Bearer`, and a
    Google Analytics id in a cookie, for secrets: the notes and the command were stored with placeholders."""
    from helpers import typed_in_bash

    notes = (
        "See the Bearer OAuth2AccessToken class for the refresh flow.\n"
        "log: Bearer 2024-01-01T00:00:00Z expired\n"
        "client = Bearer v2_0_1_beta\n"
    )
    session = "8f14e45fceea167a5a36dedd4bea2543"
    commit(repo, "docs: auth notes", {"notes.md": "# Auth\n\n" + notes})
    typed_in_bash(
        repo, f"curl -sH 'Cookie: _ga=GA1.2.1234567890.1600000000; sid={session}' http://127.0.0.1:9/; true"
    )
    raw = synced_blob(repo)
    for kept in [*notes.splitlines(), "Cookie: _ga=GA1.2.1234567890.1600000000; sid=«redacted:cookie»"]:
        assert kept.encode() in raw, kept
    assert session.encode() not in raw


@pytest.mark.slow
def test_a_password_of_words_and_digits_never_reaches_the_store_from_any_source(
    repo: Path, isolated_home: Path
) -> None:
    """`echo "password for the staging is Hunter2-Staging-55" > /dev/null` typed in bash was stored as written
    (title, body, ref, natural key) and shown by `nexusmem query "password for the staging"`: a password
    of words and digits whose digits end a word (`-55`, `-07`, `-1`, `_55`, `.55`) read as an identifier.
    Now the placeholder stands in for it from each source: the shell hook's log, a commit message, an
    agent's transcript and a Markdown doc."""
    from datetime import datetime, timedelta, timezone

    from helpers import query_json, typed_in_bash
    from helpers import transcripts as T

    commit(
        repo,
        "ops: rotate the staging login zorbcommit\n\nthe password is Hunter2-Commit-07, pw: Hunter2-Commit_55\n",
        {"docs/staging.md": "# Staging\n\nThe zorbdocs password for the staging is Hunter2-Docs.55.\n"},
    )
    chat = T.ClaudeWriter(
        "6f1c2d3e-0000-4000-8000-00000000c1b0", repo, datetime.now(timezone.utc) - timedelta(hours=1)
    )
    chat.user("zorbchat: log in to the staging box, the password for the staging is Hunter2-Chat-1")
    chat.say("Logged in to the staging box with the password you gave.")
    chat.write(isolated_home / ".claude" / "projects" / "-repo" / f"{chat.session}.jsonl")
    typed_in_bash(repo, 'echo "password for the staging is Hunter2-Staging-55" > /dev/null')

    run_cli("-C", str(repo), "sync", "-q", "--no-embed", "--conversation")
    raw = stored_blob(repo)
    for mark in (b"zorbcommit", b"zorbdocs", b"zorbchat", b"> /dev/null"):
        assert mark in raw, f"{mark!r} was not stored: its source ingested nothing"
    secrets = [
        "Hunter2-Commit-07",
        "Hunter2-Commit_55",
        "Hunter2-Docs.55",
        "Hunter2-Chat-1",
        "Hunter2-Staging-55",
    ]
    assert [s for s in secrets if s.encode() in raw] == []
    # The hook log, rewritten in place, holds the short placeholder where the typed one does not fit.
    assert re.search(
        rb'echo "password for the staging is \xc2\xabredacted(?::password)?\xc2\xbb" > /dev/null', raw
    )

    answer = query_json(repo, "password for the staging")
    refs = [item["ref"] for item in answer["items"]]
    assert 'echo "password for the staging is «redacted»" > /dev/null' in refs, refs
    said = json.dumps(answer, ensure_ascii=False)
    assert "the staging is «redacted:password»" in said and "Hunter2" not in said, said


def test_a_quoted_password_prompt_is_stored_as_written_and_a_key_ending_in_a_colon_is_not(repo: Path) -> None:
    """pexpect's commit `Issue #451: Check for "password:" as password prompt instead of "password"` was
    stored, and shown by `nexusmem query`, as `… "password:"«redacted:password»"password"`: the quote that
    closes a prompt ending in a colon was read as the one opening a value. So were an expect script's and a
    Python login helper's lines. A JSON key ending in a colon, `"password:": "…"`, still loses its value."""

    subject = 'Issue #451: Check for "password:" as password prompt instead of "password"'
    script = 'spawn ssh deploy@bastion\nexpect "password:" { send "$pw\\r" }\ninteract\n'
    helper = "child = pexpect.spawn('su -')\nchild.expect('[Pp]assword:')\nchild.expect(\"Password: \")\n"
    commit(
        repo,
        subject,
        {"login.exp": script, "login.py": helper, "prompts.json": '{"password:": "Hunter2-Zeta-55"}\n'},
    )
    raw = synced_blob(repo)
    for kept in [subject, *script.splitlines(), *helper.splitlines()]:
        assert kept.encode() in raw, kept
    assert b"Hunter2-Zeta-55" not in raw
    assert '"password:": "«redacted:password»"'.encode() in raw

    assert_query_finds(repo, "password prompt", subject)


def test_the_answer_to_a_quoted_password_prompt_never_reaches_the_store(repo: Path) -> None:
    """A login script answers a password prompt on the prompt's line -- `expect "password:" { send "…\\r" }`,
    `child.expect('Password:'); child.sendline('…')`, `("Password:", "…")` pairs -- and its commits and
    diffs were stored with the password as typed (the prompt is kept as written since rules version 4).
    The answer a variable or an ordinary word gives stays as written."""

    script = (
        "spawn ssh deploy@bastion\n"
        'expect "password:" { send "Kx9mQ2vLp8\\r" }\n'
        'expect "Passphrase:" { send "$pw\\r" }\n'
        "interact\n"
    )
    helper = (
        "child = pexpect.spawn('su -')\n"
        "child.expect('Password:'); child.sendline('Zq7Lm4pWx9v')\n"
        'child.expect("password:"); child.sendline(os.environ["PW"])\n'
        'LOGIN = [("login:", "deploy"), ("Password:", "Tr0ub4dor&3")]\n'
        'child.expect("continue connecting"); child.sendline("yes")\n'
    )
    subject = "bastion login: answer the su prompt"
    body = 'Tried by hand first: child.sendline("password:" + "Hq4Vn8Tz2Lw6")'
    commit(repo, f"{subject}\n\n{body}\n", {"login.exp": script, "login.py": helper})
    assert_stored_as(
        synced_blob(repo),
        gone=["Kx9mQ2vLp8", "Zq7Lm4pWx9v", "Tr0ub4dor&3", "Hq4Vn8Tz2Lw6"],
        kept=[
            'expect "password:" { send "«redacted:password»\\r" }',
            "child.expect('Password:'); child.sendline('«redacted:password»')",
            'LOGIN = [("login:", "deploy"), ("Password:", "«redacted:password»")]',
            'child.sendline("password:" + "«redacted:password»")',
            'expect "Passphrase:" { send "$pw\\r" }',
            'child.expect("password:"); child.sendline(os.environ["PW"])',
            'child.expect("continue connecting"); child.sendline("yes")',
        ],
    )

    assert_query_finds(repo, "bastion login su prompt", subject)


def test_the_answer_on_the_line_after_a_quoted_password_prompt_never_reaches_the_store(repo: Path) -> None:
    """An expect or pexpect script answers a password prompt on the next line -- `expect "password:"` then
    `send "…\\r"`, `child.expect('Password:')` then `child.sendline('…')` -- and its file, its diff and a
    commit message quoting it were stored with the password as typed (the same-line answer is redacted
    since rules version 5). A variable on that line, and a literal two lines down, stay as written."""

    script = 'spawn ssh deploy@bastion\nexpect "password:"\nsend "Kx9mQ2vLp8\\r"\nexpect "Passphrase:"\nsend "$pw\\r"\ninteract\n'
    helper = (
        "child = pexpect.spawn('su -')\n"
        "child.expect('Password:', timeout=30)\n"
        "child.sendline('Zq7Lm4pWx9v')\n"
        "child.expect('continue connecting')\n"
        "child.sendline('yes')\n"
    )
    subject = "bastion login: answer the su prompt on its own line"
    body = 'Tried by hand first:\n\n    p.expect("passphrase:");\n    p.sendline("Hq4Vn8Tz2Lw6")\n'
    commit(repo, f"{subject}\n\n{body}", {"login.exp": script, "login.py": helper})
    assert_stored_as(
        synced_blob(repo),
        gone=["Kx9mQ2vLp8", "Zq7Lm4pWx9v", "Hq4Vn8Tz2Lw6"],
        kept=[
            'send "«redacted:password»\\r"',
            "child.sendline('«redacted:password»')",
            'p.sendline("«redacted:password»")',
            'send "$pw\\r"',
            "child.sendline('yes')",
        ],
    )

    assert_query_finds(repo, "bastion login su prompt own line", subject)


def _bundle_line(size: int) -> str:
    """A vendored JavaScript bundle's one line of inlined wasm, SIZE characters of base64 after the prefix."""
    import base64

    blob = base64.b64encode(bytes(range(256)) * (size // 340 + 1)).decode()[:size]
    return f'      new URL("data:application/wasm;base64,{blob}"),'


def test_a_commit_holding_a_huge_one_line_bundle_syncs_in_seconds(repo: Path) -> None:
    """gdamore/tcell vendors a JavaScript file whose inlined wasm is one 550 KB line saying `base64`: its first
    sync never ended (redacting that diff started a scan to the end of the line at every position of it:
    80,000 characters took a minute, the whole line hours). The commit now syncs at once, its diff is stored,
    and a secret in the same file is still redacted."""
    token = "ghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"
    bundle = "export const defaults = [\n" + _bundle_line(600_000) + "\n];\n"
    commit(
        repo, "chore(wasm): vendor the web build", {"web/bundle.js": bundle + f"// {token} canarybundle\n"}
    )
    done = subprocess.run(
        [console_script(), "-C", str(repo), "sync", "-q", "--no-embed"],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, not a speed figure (benchmarks/bench_redact.py --long-lines measures)
        check=False,
    )
    assert done.returncode == 0, done.stderr
    raw = stored_blob(repo)
    assert b"canarybundle" in raw and b"data:application/wasm;base64," in raw
    assert token.encode() not in raw
