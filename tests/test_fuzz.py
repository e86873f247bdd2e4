"""Property-based fuzzing of every parser that reads outside input (hypothesis).

The property, for each: it never raises anything but its documented error, and valid records around a bad
one are kept. CI runs a bounded number of examples per property (NEXUSMEM_FUZZ_EXAMPLES, default 60);
`scripts/fuzz --examples N` runs the same properties longer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusmem import config, gitcmd, registry
from nexusmem.errors import ConfigError
from nexusmem.nodes import MAX_TS_MS, MIN_TS_MS, text_ok
from nexusmem.sources import docs
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git import changewords as git_changewords
from nexusmem.sources.git import commits as git_commits
from nexusmem.sources.git import diff as git_diff
from nexusmem.sources.shell import history as shell_history
from nexusmem.sources.shell import logline as shell_logline
from nexusmem.sources.shell import node as shell_node

EXAMPLES = int(os.environ.get("NEXUSMEM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

# Text as hostile input has it: any code point, including lone surrogates, controls and NULs.
any_text = st.text(st.characters(codec=None), max_size=200)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=20,
)
hook_keys = st.sampled_from(["ts", "cwd", "command", "exit", "pipestatus", "duration_ms", "shell", "session"])
hook_objects = st.dictionaries(hook_keys | any_text, json_values, max_size=9)


def dumps(value: Any) -> bytes:
    """JSON as a buggy or hostile hook could write it: surrogates escaped, NaN allowed."""
    return json.dumps(value, ensure_ascii=True).encode()


def valid_line(i: int) -> bytes:
    return dumps({"ts": 1_700_000_000_000 + i, "cwd": "/r", "command": f"echo valid{i}", "exit": 0})


# ------------------------------------------------------------------------------------------ shell log


@FUZZ
@given(st.binary(max_size=300) | hook_objects.map(dumps) | json_values.map(dumps))
def test_one_hook_line_never_raises_and_what_it_accepts_is_storable(raw: bytes) -> None:
    line = shell_logline.parse_log_line(raw)
    if line is None:
        assert isinstance(shell_logline.line_problem(shell_logline._loads_or_bad(raw)), str)
        return
    assert MIN_TS_MS <= line.ts < MAX_TS_MS
    assert all(text_ok(s) for s in (line.cwd, line.command, line.shell, line.session))
    assert line.exit is None or shell_logline.EXIT_MIN <= line.exit < shell_logline.EXIT_MAX
    assert line.duration_ms is None or 0 <= line.duration_ms <= shell_logline.MAX_DURATION_MS
    shell_node._context_tail(line.pipestatus, line.duration_ms, line.shell)  # formats without overflow


@pytest.mark.slow
@FUZZ
@given(st.lists(st.binary(max_size=200) | hook_objects.map(dumps), min_size=1, max_size=6))
def test_valid_hook_lines_around_bad_ones_are_kept(tmp_path: Path, bad: list[bytes]) -> None:
    lines: list[bytes] = []
    for i, garbage in enumerate(bad):
        lines.append(valid_line(i))
        lines.append(garbage.replace(b"\n", b" "))
    lines.append(valid_line(len(bad)))
    path = tmp_path / "shell-history.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    commands = []
    for end, record in shell_logline.iter_log_records(path, 0, batch=4):
        assert end > 0
        parsed = shell_logline.log_line_from(record)
        if parsed is not None and parsed.command.startswith("echo valid"):
            commands.append(parsed.command)
    assert commands == [f"echo valid{i}" for i in range(len(bad) + 1)]


# ------------------------------------------------------------------------------------- history files

history_lines = st.lists(any_text.map(lambda t: t.replace("\n", " ")), max_size=12)


@FUZZ
@given(st.sampled_from(sorted(shell_history._PARSERS)), history_lines)
def test_history_parsers_never_raise(name: str, lines: list[str]) -> None:
    for entry in shell_history._PARSERS[name](lines):
        assert isinstance(entry.command, str) and entry.command.strip()
        assert entry.ts is None or (isinstance(entry.ts, int) and entry.ts >= 0)
        assert entry.duration_s is None or entry.duration_s >= 0


@FUZZ
@given(st.binary(max_size=400))
def test_zsh_history_bytes_never_raise(raw: bytes) -> None:
    lines = shell_history._decode_history("zsh", raw.split(b"\n"))
    shell_history.parse_zsh_history(lines)


@FUZZ
@given(any_text.map(lambda t: t.replace("\n", " ")))
def test_valid_history_entries_around_a_bad_line_are_kept(garbage: str) -> None:
    garbage = garbage.rstrip("\\`")  # a trailing \\ (zsh) or ` (pwsh) legitimately continues a command
    zsh = shell_history.parse_zsh_history(
        [": 1700000000:0;echo before", garbage, ": 1700000001:0;echo after"]
    )
    assert zsh[0].command == "echo before" and zsh[-1].command == "echo after"
    assert (zsh[0].ts, zsh[-1].ts) == (1_700_000_000, 1_700_000_001)
    if not garbage.startswith(("- cmd:", "  when:")):
        fish = shell_history.parse_fish_history(
            ["- cmd: echo before", "  when: 1700000000", garbage, "- cmd: echo after", "  when: 1700000001"]
        )
        assert fish[0].command == "echo before" and fish[-1].command == "echo after"
        assert fish[-1].ts == 1_700_000_001
    pwsh = shell_history.parse_pwsh_history(["echo before", garbage, "echo after"])
    assert pwsh[0].command == "echo before" and pwsh[-1].command == "echo after"
    bash = shell_history.parse_bash_history(
        ["#1700000000", "echo before", "#1700000001", garbage, "#1700000002", "echo after"]
    )
    assert bash[0].command == "echo before" and bash[-1].command == "echo after"


# ------------------------------------------------------------------------------------ git log stream


def header(sha: str, subject: str, ts: bytes = b"1700000000") -> bytes:
    return (
        b"NXM"
        + sha.encode()
        + b"\x1f\x1f"
        + ts
        + b"\x1f"
        + ts
        + b"\x1fA\x1f"
        + subject.encode()
        + b"\x1f"
        + subject.encode()
        + b"\n"
    )


@FUZZ
@given(st.binary(max_size=300), st.binary(max_size=40), st.integers(min_value=1, max_value=64))
def test_commit_stream_keeps_the_records_around_garbage(garbage: bytes, bad_ts: bytes, chunk: int) -> None:
    first, second = "a" * 40, "b" * 40
    stream = (
        header(first, "first")
        + b"\x00\n1\t2\tsrc/a.py\x00"
        + garbage.replace(b"\x00NXM", b"\x00nxm")
        + b"\x00\x00"
        + header("c" * 40, "odd time", bad_ts.replace(b"\x1f", b"").replace(b"\x00", b""))
        + b"\x00\x00"
        + header(second, "second")
        + b"\x00\n3\t4\tsrc/b.py\x00"
    )
    chunks = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
    records = list(git_commits.parse_commit_stream(chunks))
    shas = [r.header.sha for r in records]
    assert shas[0] == first and shas[-1] == second
    assert records[-1].files[-1].path == "src/b.py" and (
        records[-1].files[-1].added,
        records[-1].files[-1].deleted,
    ) == (3, 4)


@FUZZ
@given(st.lists(st.binary(max_size=120), max_size=8))
def test_commit_stream_never_raises(chunks: list[bytes]) -> None:
    for record in git_commits.parse_commit_stream(chunks):
        assert len(record.header.sha) in (40, 64)


def _git_env() -> dict[str, str]:
    """git with a fixed identity and no user or system config: a module-scoped fixture runs before the
    per-test isolated HOME is in place."""
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@b",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }


@pytest.fixture(scope="module")
def patch_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The real `git log -p` output (as iter_diff_nodes asks for it) of a two-commit repository."""
    repo = tmp_path_factory.mktemp("diffrepo")
    env = _git_env()
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "feat: first"]):
        if args[0] == "add":
            (repo / "first.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "second.py").write_text("c = 3\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "fix: second"], cwd=repo, env=env, check=True)
    args = ["log", "-p", *git_commits._LOG_STABLE, git_commits._FORMAT + "%x00", "HEAD", "--"]
    return list(gitcmd.stream(args, repo))


@FUZZ
@given(st.lists(st.binary(max_size=120), max_size=8), st.sampled_from([0, 1, 2, 3]))
def test_diff_stream_keeps_the_commits_around_garbage(
    patch_lines: list[bytes], garbage: list[bytes], where: int
) -> None:
    starts = [i for i, line in enumerate(patch_lines) if line.startswith(b"\0NXM")]
    assert len(starts) == 2  # newest first: "fix: second", then "feat: first"
    # Garbage goes between the two commits, or after the second's header, or at either end.
    cut = [starts[1], starts[1] + 1, 0, len(patch_lines)][where]
    junk = [(g.replace(b"\n", b" ").replace(b"\0", b"") + b"\n") for g in garbage]
    lines = patch_lines[:cut] + junk + patch_lines[cut:]
    ctx = ScanContext(root=Path("/nonexistent"), project_id="p", config={})
    nodes = list(git_diff.iter_diff_nodes(ctx, "diff", [], git_diff.DiffStats(), lines=lines))
    paths = [node.meta["path"] for node in nodes]
    assert "second.py" in paths
    if where != 1:  # junk right after a header is that commit's (garbage) patch text; the other survives
        assert "first.py" in paths


@pytest.fixture(scope="module")
def walk_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The real one-walk log (`git log -z -p --numstat -U1`, as iter_commits_with_words asks for it) of a
    repository with two changing commits and an empty one between them."""
    repo = tmp_path_factory.mktemp("walkrepo")
    env = _git_env()
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    for name, text, message in (
        ("first.py", "def firstFunction():\n    return 1\n", "feat: first"),
        (None, "", "chore: nothing"),
        ("second.py", "def secondFunction():\n    return 2\n", "fix: second"),
    ):
        if name is not None:
            (repo / name).write_text(text, encoding="utf-8")
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, env=env, check=True)
    args = [
        "log",
        "-z",
        "-p",
        "--numstat",
        "--unified=1",
        *git_commits._LOG_STABLE,
        git_commits._FORMAT,
        "HEAD",
    ]
    return list(gitcmd.stream([*args, "--"], repo))


@FUZZ
@given(st.lists(st.binary(max_size=120), max_size=8), st.sampled_from([0, 1, 2, 3, 4]))
def test_commit_words_stream_keeps_the_commits_around_garbage(
    walk_lines: list[bytes], garbage: list[bytes], where: int
) -> None:
    starts = [i for i, line in enumerate(walk_lines) if line.startswith(b"\0NXM")]
    assert len(starts) == 2  # "fix: second" (whose header line also holds the empty commit's), "feat: first"
    # Junk lines (no header marker at their start) between the commits, after a header, at either end.
    cut = [starts[1], starts[1] + 1, starts[0] + 1, 0, len(walk_lines)][where]
    junk = [g.replace(b"\n", b" ").replace(b"\0NXM", b"\0nxm").lstrip(b"\0") + b"\n" for g in garbage]
    lines = walk_lines[:cut] + junk + walk_lines[cut:]
    walked = list(git_changewords.parse_commit_words_stream(lines, []))
    subjects = [rec.header.subject for rec, _ in walked]
    assert subjects == ["fix: second", "chore: nothing", "feat: first"]
    if where != 2:  # junk inside a header is that commit's (garbage) message and numstat
        assert [f.path for f in walked[0][0].files] == ["second.py"]
    if where in (3, 4):  # junk outside every commit leaves every commit's words as they were
        words = {rec.header.subject: w for rec, w in walked}
        expected = {
            "fix: second": "secondfunction second",
            "chore: nothing": "",
            "feat: first": "firstfunction first",
        }
        if (
            where == 4
        ):  # after the last hunk, a junk line that looks like one of its lines ("+A0A") is read as one
            assert words.pop("feat: first").startswith(expected.pop("feat: first"))
        assert words == expected


@FUZZ
@given(
    st.lists(st.binary(max_size=120) | st.sampled_from([b"\0NXM", b"\0\0", b"@@ -1 +1 @@ f\n"]), max_size=12)
)
def test_commit_words_stream_never_raises(lines: list[bytes]) -> None:
    for record, words in git_changewords.parse_commit_words_stream(lines, ["*.lock"]):
        assert len(record.header.sha) in (40, 64) and isinstance(words, str)


# ------------------------------------------------------------------------------------------ Markdown


@FUZZ
@given(
    st.lists(
        any_text | st.sampled_from(["# H", "## Sub", "```", "~~~", "---", "===", "> q", ""]), max_size=30
    )
)
def test_markdown_splitter_never_raises_and_keeps_every_heading(parts: list[str]) -> None:
    text = "\n".join(["# Before", "kept text", "", *parts, "", "# After", "also kept"])
    sections = docs.split_sections(text, "f.md")
    assert sections[0].heading == "Before" and "kept text" in sections[0].text
    if "```" not in parts and "~~~" not in parts:  # an unclosed fence legitimately swallows the rest
        assert sections[-1].heading == "After" and "also kept" in sections[-1].text
    for section in sections:
        assert section.line >= 1 and section.text


# Per markup: its splitter, the lines before and after the drawn ones with the titles they hold, lines worth
# drawing, a block opener that may legitimately swallow the rest (None: nothing may), and the levels its
# sections may have.
MARKUPS: dict[
    str, tuple[Any, list[str], list[str], tuple[str, str], list[str], re.Pattern[str] | None, Any]
] = {
    "rst": (
        docs.split_rst_sections,
        ["Before", "======", "", "kept text", ""],
        ["", "After", "======", "", "also kept"],
        ("Before", "After"),
        ["Title", "=====", "-----", "~~~", "::", "    indented", ".. note::", "----", ""],
        None,
        lambda level: level >= 1,
    ),
    "1": (
        docs.split_man_sections,
        [".TH X 1", ".SH BEFORE", "kept text"],
        [".SH AFTER", "also kept"],
        ("BEFORE", "AFTER"),
        [".SH", ".SS Sub", ".TP", '.BI "a" b', ".IP \\(bu 3n", "\\f", "\\(", '.\\" c', ""],
        None,
        lambda level: level in (1, 2),
    ),
    "adoc": (
        docs.split_asciidoc_sections,
        ["== Before", "kept text"],
        ["", "== After", "also kept"],
        ("Before", "After"),
        ["== Sub", "----", "....", "====", "= Top", "[source]", "// c", "Title", "~~~~~", ""],
        docs._ADOC_FENCE,
        lambda level: True,
    ),
    "org": (
        docs.split_org_sections,
        ["* Before", "kept text"],
        ["", "* After", "also kept"],
        ("Before", "After"),
        ["** Sub", "* Top :tag:", "#+BEGIN_SRC sh", "#+end_src", "*bold*", "***", ""],
        docs._ORG_BEGIN,
        lambda level: True,
    ),
}


@pytest.mark.parametrize("markup", sorted(MARKUPS))
@FUZZ
@given(data=st.data())
def test_splitters_never_raise_and_keep_every_title(markup: str, data: st.DataObject) -> None:
    """reStructuredText, troff, AsciiDoc and Org: the titles around any lines stay sections, unless a block
    left open swallows the rest (as Markdown's unclosed fence does; rst and troff have none)."""
    split, before, after, (first, last), lines, opener, level_ok = MARKUPS[markup]
    parts = data.draw(st.lists(any_text | st.sampled_from(lines), max_size=30))
    sections = split("\n".join([*before, *parts, *after]), f"f.{markup}")
    assert sections[0].heading == first and "kept text" in sections[0].text
    drawn = "\n".join(parts).split("\n")
    if opener is None or not any(opener.match(line) for line in drawn):
        assert sections[-1].heading == last and "also kept" in sections[-1].text
    for section in sections:
        assert section.line >= 1 and section.text and level_ok(section.level)


# --------------------------------------------------------------------------- config and projects.json


@FUZZ
@given(json_values.map(dumps) | st.binary(max_size=300))
def test_config_raises_only_config_errors(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    try:
        loaded = config.load(path)
    except ConfigError as exc:
        assert str(path) in str(exc)
        return
    assert loaded["version"] == config.CONFIG_VERSION


@FUZZ
@given(
    json_values.map(dumps) | st.binary(max_size=300) | hook_objects.map(lambda o: dumps({"projects": [o]}))
)
def test_projects_json_never_raises(tmp_path: Path, raw: bytes) -> None:
    # conftest's isolated home is per test: every example overwrites the same projects.json in it.
    path = Path(os.environ["NEXUSMEM_HOME"]) / "projects.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    projects = registry.load()
    assert all(isinstance(p, dict) and "root" in p for p in projects)


def test_deep_nesting_is_covered() -> None:
    """The generated values stay shallow; the one input that crashed every sync is checked explicitly."""
    deep = b'{"ts":1,"cwd":"/","command":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert shell_logline.parse_log_line(deep) is None
    assert shell_logline.line_problem(shell_logline._loads_or_bad(deep)) == "JSON nested too deeply"
