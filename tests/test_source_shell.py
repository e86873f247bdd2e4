"""ShellSource on real git repositories: attribution, offsets, bad lines, redaction, history scraping."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nexusmem import sync
from nexusmem.config import defaults
from nexusmem.hygiene import hooklog
from nexusmem.nodes import Node
from nexusmem.paths import shell_log_path
from nexusmem.project import load as open_project
from nexusmem.redact import redact
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.shell.attribution import command_files
from nexusmem.sources.shell.history import unmetafy
from nexusmem.sources.shell.source import ShellSource

from helpers import commit, git

TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"


@pytest.fixture(autouse=True)
def no_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)


def line(cwd: Path | str, command: str, ts: int = 1_700_000_000_000, **extra: Any) -> bytes:
    obj: dict[str, Any] = {
        "ts": ts,
        "cwd": str(cwd),
        "exit": 0,
        "command": command,
        "shell": "bash",
        "session": "s1",
        "v": 1,
    }
    obj.update(extra)
    return (json.dumps(obj) + "\n").encode()


def write_log(*lines: bytes, append: bool = False) -> Path:
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab" if append else "wb") as fh:
        for item in lines:
            fh.write(item)
    return path


def scan(
    root: Path, cursor: str | None = None, *, scrape: bool = False, full: bool = False, tail: int = 2000
) -> tuple[ScanResult, list[Node]]:
    config = defaults()
    config["sources"]["shell"]["scrapeFallback"] = scrape
    config["sources"]["shell"]["scrapeTailLines"] = tail
    result = ShellSource().scan(
        ScanContext(root=root, project_id="proj", config=config, cursor=cursor, full=full)
    )
    return result, list(result.nodes)


@pytest.fixture
def project(repo: Path) -> Path:
    commit(repo, "init", {"src/app.py": "x = 1\n", "tests/test_x.py": "def test(): pass\n"})
    return repo


def test_attribution_root_subdir_worktree_and_elsewhere(project: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(project, "worktree", "add", "-q", str(worktree))
    other = tmp_path / "other"
    other.mkdir()
    write_log(
        line(project, "make build", ts=1),
        line(project / "src", "python app.py", ts=2),
        line(worktree / "src", "pytest ../tests/test_x.py", ts=3),
        line(other, "ls other", ts=4),
        line(str(project) + "-sibling", "echo not a child", ts=5),
    )
    result, nodes = scan(project)
    assert result.skipped == 0
    assert [(n.ref, n.meta["cwd"]) for n in nodes] == [
        ("make build", "."),
        ("python app.py", "src"),
        # Another checkout's folder is kept as its path from this one: its runs are not this checkout's.
        ("pytest ../tests/test_x.py", os.path.relpath(worktree.resolve() / "src", project.resolve())),
    ]
    assert nodes[2].meta["cwd"].startswith("../") and nodes[2].meta["cwd"].endswith("wt/src")
    assert nodes[1].files == ("src/app.py",)
    assert nodes[2].files == ("tests/test_x.py",)
    assert nodes[0].title == "make build (exit 0)"
    assert nodes[0].natural_key == "s1\x1f1\x1fmake build"
    assert nodes[0].meta["scraped"] is False and nodes[0].group is None


def test_a_repository_inside_this_one_is_another_project(project: Path, tmp_path: Path) -> None:
    """A repository cloned inside this one (or a submodule) is another project: its commands were recorded
    in both memories, and a home folder kept in git took in every command of every project under it."""
    inner = project / "vendor" / "inner"
    inner.mkdir(parents=True)
    git(inner, "init", "-q")
    write_log(
        line(project / "vendor", "ls inner", ts=1),
        line(inner, "echo mango-inner-cmd", ts=2),
        line(inner / "src", "make", ts=3),
        line(project / "src", "python app.py", ts=4),
    )
    _, nodes = scan(project)
    assert [n.ref for n in nodes] == ["ls inner", "python app.py"]
    _, inside = scan(inner)
    assert [n.ref for n in inside] == ["echo mango-inner-cmd", "make"]


def test_symlinked_cwd_is_attributed(project: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    write_log(line(link / "src", "python app.py"))
    _, nodes = scan(project)
    assert [n.meta["cwd"] for n in nodes] == ["src"]
    # and the other way round: the root reached through the link
    _, nodes2 = scan(link)
    assert [n.ref for n in nodes2] == ["python app.py"]


def test_second_scan_reads_only_new_lines(project: Path) -> None:
    write_log(line(project, "make a", ts=1), line(project, "make b", ts=2))
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == ["make a", "make b"]
    _, again = scan(project, result.cursor)
    assert again == []
    write_log(line(project, "make c", ts=3), append=True)
    result3, nodes3 = scan(project, result.cursor)
    assert [n.ref for n in nodes3] == ["make c"]
    _, full = scan(project, result3.cursor, full=True)
    assert [n.ref for n in full] == ["make a", "make b", "make c"]


def test_truncated_last_line_is_read_again_when_complete(project: Path) -> None:
    complete = line(project, "make done", ts=1)
    partial = line(project, "make partial", ts=2)
    write_log(complete, partial[:20])
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == ["make done"]
    assert result.skipped == 1
    write_log(partial[20:], append=True)
    result2, nodes2 = scan(project, result.cursor)
    assert [n.ref for n in nodes2] == ["make partial"]
    assert result2.skipped == 0


def test_replaced_shorter_log_is_read_from_start_without_new_ids(project: Path) -> None:
    write_log(*(line(project, f"make t{i}", ts=i) for i in range(10)))
    result, nodes = scan(project)
    ids = {n.id for n in nodes}
    path = shell_log_path()
    path.unlink()
    write_log(line(project, "make t0", ts=0), line(project, "make new", ts=99))
    _, nodes2 = scan(project, result.cursor)
    assert [n.ref for n in nodes2] == ["make t0", "make new"]
    assert nodes2[0].id in ids
    # truncated in place (same inode) and rewritten: the head hash notices
    result3, _ = scan(project)
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(line(project, "make other", ts=5))
    _, nodes4 = scan(project, result3.cursor)
    assert [n.ref for n in nodes4] == ["make other"]


def test_a_line_deleted_in_place_past_the_head_makes_the_next_sync_read_again_from_the_start(
    project: Path,
) -> None:
    """A log edited in place (same file, a line deleted past its first 4 KB, lines appended since): the
    saved offset no longer follows a line's end. The sync read from it lost the first line appended and
    read the next from its middle; it must notice and read the log again from the start, which stores
    nothing twice (ids are content-addressed)."""
    lines = [line(project, f"make step-{i:03d}", ts=1_700_000_000_000 + i) for i in range(80)]
    lines[60] = line(project, "make step-060 --with a much longer line than the others", ts=1_700_000_000_060)
    log = write_log(*lines)
    assert sum(map(len, lines[:60])) > 4096
    first = sync.sync(project, embed=False)
    assert next(s for s in first.sources if s.name == "shell").added == 80
    with open(log, "r+b") as fh:  # as an editor that writes in place does: same inode, shorter
        kept = b"".join(lines[:60] + lines[61:])
        fh.write(kept)
        fh.truncate(len(kept))
    write_log(*(line(project, f"make after-{i}", ts=1_700_000_001_000 + i) for i in range(3)), append=True)
    assert log.stat().st_size >= sum(map(len, lines))  # not shorter than the offset: size alone cannot tell
    second = next(s for s in sync.sync(project, embed=False).sources if s.name == "shell")
    assert (second.added, second.updated, second.skipped, second.problems) == (3, 0, 0, []), second
    with open_project(project).open_store() as store:
        commands = sorted(n.title.split(" (exit")[0] for n in store.iter_nodes("shell_command"))
    assert commands == sorted(
        [f"make step-{i:03d}" for i in range(80) if i != 60]
        + ["make step-060 --with a much longer line than the others"]
        + [f"make after-{i}" for i in range(3)]
    )
    # Appending only: the next sync reads only the new line.
    write_log(line(project, "make after-3", ts=1_700_000_002_000), append=True)
    third = next(s for s in sync.sync(project, embed=False).sources if s.name == "shell")
    assert (third.added, third.updated, third.skipped) == (1, 0, 0), third


def test_the_redaction_of_a_line_read_before_the_pass_saw_it_costs_no_re_read(project: Path) -> None:
    """A sync's redaction pass runs before its sources; lines a hook appends meanwhile are read raw (and
    redacted in memory) and rewritten in place by the next sync's pass. That rewrite lies before the
    project's offset, but it is ours and keeps every line where it was: it must not read as an edit that
    sends the sync back to the start of the log."""
    write_log(*(line(project, f"make step-{i:03d}", ts=1_700_000_000_000 + i) for i in range(60)))
    checked, _ = hooklog.redact_pass()  # the pass at the start of a sync
    write_log(line(project, f"export GITHUB_TOKEN={TOKEN}", ts=1_700_000_001_000), append=True)

    def scan_after_pass(cursor: str | None, redacted_to: int) -> tuple[ScanResult, list[Node]]:
        config = defaults()
        config["sources"]["shell"]["scrapeFallback"] = False
        ctx = ScanContext(root=project, project_id="proj", config=config, cursor=cursor)
        ctx.known["log_redacted_to"] = redacted_to
        result = ShellSource().scan(ctx)
        return result, list(result.nodes)

    first, nodes = scan_after_pass(None, checked.end)
    assert len(nodes) == 61
    again, _ = hooklog.redact_pass()  # the next sync's pass rewrites the token's line in place
    assert again.redacted == 1 and TOKEN.encode() not in shell_log_path().read_bytes()
    write_log(line(project, "make after", ts=1_700_000_002_000), append=True)
    _, nodes = scan_after_pass(first.cursor, again.end)
    assert [n.ref for n in nodes] == ["make after"]


def test_bad_lines_are_counted_and_good_lines_kept(project: Path) -> None:
    huge = b'{"ts": 1, "cwd": "' + str(project).encode() + b'", "command": "' + b"x" * (10 << 20) + b'"}\n'
    write_log(
        line(project, "make one", ts=1),
        b"\xff\xfe garbage \x00\x01\n",
        b"{not json\n",
        huge,
        b'{"ts": 2, "cwd": "/x"}\n',  # missing command, in another folder: not this project's to count
        b'{"cwd": "' + str(project).encode() + b'", "command": "make nots"}\n',  # missing ts
        b'{"ts": "3", "cwd": "' + str(project).encode() + b'", "command": "make strts"}\n',
        b"[1, 2]\n",
        b'{"ts": 1, }\n',  # looks like an object, is not JSON: its batch falls back to line by line
        b'{"x": 1}, {"y": 2}\n',  # two values on one line would shift a batch: detected, counted bad
        b"\n",
        line(project, "make two", ts=4, future_key={"a": 1}, exit="weird"),
        line(project, "   ", ts=5),  # empty command: skipped silently
        line(project, "make three", ts=6, pipestatus=[0, 1], duration_ms=1500, exit=1),
    )
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == ["make one", "make two", "make three"]
    assert result.skipped == 8
    assert nodes[1].meta["exit"] is None and nodes[1].title == "make two (exit unknown)"
    assert nodes[2].meta["pipestatus"] == [0, 1] and nodes[2].meta["duration_ms"] == 1500
    assert "pipestatus 0|1" in nodes[2].body and "1.5 s" in nodes[2].body
    assert nodes[2].signal > nodes[0].signal  # a failure is worth more


def test_a_nul_in_a_lines_folder_skips_that_line_only(project: Path) -> None:
    # Valid JSON ("\u0000" is a legal escape), but no folder's name holds a NUL: os.path.realpath raised on
    # it, and the whole sync of every project stopped at this one line, for good.
    write_log(
        line(project, "make before", ts=1),
        line(f"{project}\x00", "make nul", ts=2),
        line(f"/elsewhere\x00/{project}", "make nul2", ts=3),
        line(project, "make after", ts=4),
    )
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == ["make before", "make after"]
    assert result.skipped == 2
    assert all("holds a NUL" in problem for problem in result.problems)


def test_a_torn_line_costs_only_itself_not_the_line_glued_to_it(project: Path) -> None:
    # bash writes a line over 8 KB in 8,192-byte pieces: a shell killed between two (or a full disk) leaves a
    # start without its newline, and the next hook's line is appended to it. Both used to be lost.
    torn = line(project, "make torn " + "x" * 9000, ts=2)[:8192]
    write_log(
        line(project, "make before", ts=1),
        torn + line(project, "make glued", ts=3),
        line(project, "make after", ts=4),
    )
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == ["make before", "make glued", "make after"]
    assert result.skipped == 1 and "cut short" in result.problems[0]
    assert all("torn" not in json.dumps(n.meta) for n in nodes)


def test_redaction_before_title_body_ref_meta(project: Path) -> None:
    write_log(line(project, f"export GITHUB_TOKEN={TOKEN}"))
    _, nodes = scan(project)
    (node,) = nodes
    for text in (node.ref, node.title, node.body, node.natural_key, json.dumps(node.meta)):
        assert TOKEN not in text
    assert node.ref == redact(f"export GITHUB_TOKEN={TOKEN}") != f"export GITHUB_TOKEN={TOKEN}"
    assert "«redacted:" in node.ref and "«redacted:" in node.body


def test_multiline_command_title(project: Path) -> None:
    long = "echo " + "a" * 300
    write_log(line(project, "for i in 1 2\ndo echo $i\ndone", ts=1), line(project, long, ts=2))
    _, nodes = scan(project)
    assert nodes[0].title == "for i in 1 2 … (exit 0)"
    assert nodes[0].body.startswith("for i in 1 2\ndo echo $i\ndone\n[cwd . · exit 0")
    assert len(nodes[1].title) < 140 and nodes[1].title.endswith("… (exit 0)")


def test_command_files_tokens(project: Path) -> None:
    root = Path(os.path.realpath(project))
    files = command_files(
        "pytest tests/test_x.py::test_a --cov=src/app.py ruff src/app.py:12 https://x.io/a.py missing.py",
        root,
        root,
    )
    assert files == ("tests/test_x.py", "src/app.py")
    assert command_files("cat ../../etc/passwd", root / "src", root) == ()


# ------------------------------------------------------------------------------------- scraping


def scraped(nodes: list[Node], shell: str) -> list[Node]:
    return [n for n in nodes if n.meta["scraped"] and n.meta["shell"] == shell]


def test_scrape_bash_with_timestamps(project: Path, isolated_home: Path) -> None:
    (isolated_home / ".bash_history").write_text(
        "#1700000000\nmake build\n#1700000100\ngit status\n#1700000200\nmake build\n", encoding="utf-8"
    )
    result, nodes = scan(project, scrape=True)
    bash = scraped(nodes, "bash")
    assert [(n.ref, n.ts) for n in bash] == [
        ("make build", 1_700_000_000_000),
        ("git status", 1_700_000_100_000),
        ("make build", 1_700_000_200_000),
    ]
    assert bash[0].title == "make build (exit unknown)"
    assert bash[0].meta["exit"] is None and bash[0].meta["cwd"] is None
    assert len({n.id for n in bash}) == 3
    # unchanged history file: nothing re-emitted
    _, again = scan(project, result.cursor, scrape=True)
    assert again == []


def test_scrape_plain_bash_tail_and_repeats(project: Path, isolated_home: Path) -> None:
    (isolated_home / ".bash_history").write_text("old\nls\nls\nmake\n", encoding="utf-8")
    _, nodes = scan(project, scrape=True, tail=3)
    bash = scraped(nodes, "bash")
    assert [n.ref for n in bash] == ["ls", "ls", "make"]
    assert bash[0].natural_key != bash[1].natural_key


def test_scrape_zsh_extended_multiline_and_metafied(project: Path, isolated_home: Path) -> None:
    # zsh metafies the bytes 0x83..0xa2 (and NUL) as 0x83 followed by byte ^ 0x20: "→" is e2 86 92.
    arrow = b"echo \xe2\x83\xa6\x83\xb2"
    data = (
        b": 1700000000:3;make test\n"
        b": 1700000050:0;for i in 1 2; do\\\necho $i\\\ndone\n"
        b"plain command\n"
        b": 1700000090:0;" + arrow + b"\n"
        b": 1700000099:0;printf '\x83\xa3'\n"
    )
    (isolated_home / ".zsh_history").write_bytes(data)
    _, nodes = scan(project, scrape=True)
    zsh = scraped(nodes, "zsh")
    assert [n.ref for n in zsh[:4]] == [
        "make test",
        "for i in 1 2; do\necho $i\ndone",
        "plain command",
        "echo →",
    ]
    assert zsh[0].meta["duration_ms"] == 3000 and zsh[0].ts == 1_700_000_000_000
    assert unmetafy(b"\x83\xa3") == b"\x83"
    assert unmetafy(b"a\x83\x20b") == b"a\x00b"


def test_scrape_fish_honours_xdg(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_home = tmp_path / "xdg"
    (data_home / "fish").mkdir(parents=True)
    (data_home / "fish" / "fish_history").write_text(
        "- cmd: git status\n  when: 1700000000\n- cmd: echo a\\nb \\\\ c\n  when: 1700000010\n  paths:\n"
        "    - src/app.py\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(data_home))
    _, nodes = scan(project, scrape=True)
    fish = scraped(nodes, "fish")
    assert [(n.ref, n.ts) for n in fish] == [
        ("git status", 1_700_000_000_000),
        ("echo a\nb \\ c", 1_700_000_010_000),
    ]


def test_scrape_pwsh_backtick_continuation(project: Path, isolated_home: Path) -> None:
    path = isolated_home / ".local" / "share" / "powershell" / "PSReadLine" / "ConsoleHost_history.txt"
    path.parent.mkdir(parents=True)
    path.write_text("Get-ChildItem\nInvoke-Thing -A 1 `\n  -B 2\npytest tests/test_x.py\n", encoding="utf-8")
    _, nodes = scan(project, scrape=True)
    pwsh = scraped(nodes, "pwsh")
    assert [n.ref for n in pwsh] == ["Get-ChildItem", "Invoke-Thing -A 1 \n  -B 2", "pytest tests/test_x.py"]
    assert pwsh[2].files == ("tests/test_x.py",)


def test_no_scrape_once_the_hook_log_has_that_shell(project: Path, isolated_home: Path) -> None:
    (isolated_home / ".bash_history").write_text("make from-history\n", encoding="utf-8")
    (isolated_home / ".zsh_history").write_text("make from-zsh\n", encoding="utf-8")
    write_log(line("/somewhere/else", "ls", shell="bash"))  # another project's line still proves the hook
    result, nodes = scan(project, scrape=True)
    assert [n.ref for n in nodes] == ["make from-zsh"]
    # the knowledge persists in the cursor: still no bash scrape after the log has moved on
    (isolated_home / ".bash_history").write_text("make from-history\nmake more\n", encoding="utf-8")
    _, nodes2 = scan(project, result.cursor, scrape=True)
    assert nodes2 == []


def test_chunk_boundaries_and_overlong_lines(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.sources.shell import logline as shell_module_logline

    # Tiny chunks and a tiny line cap exercise every boundary case of the reader on a small file.
    monkeypatch.setattr(shell_module_logline, "CHUNK_BYTES", 7)
    monkeypatch.setattr(shell_module_logline, "MAX_LINE_BYTES", 300)
    good = [line(project, f"make t{i}", ts=i) for i in range(5)]
    overlong = line(project, "echo " + "y" * 400, ts=99)
    path = write_log(good[0], overlong, good[1], good[2], overlong, overlong, good[3], good[4][:-1])
    records = list(shell_module_logline.iter_log_lines(path, 0))
    ends = [end for end, _ in records]
    assert ends[-1] == -1 and ends[:-1] == sorted(ends[:-1])
    assert [raw for _, raw in records[:-1]] == [
        good[0][:-1],
        None,
        good[1][:-1],
        good[2][:-1],
        None,
        None,
        good[3][:-1],
    ]
    assert ends[-2] == path.stat().st_size - len(good[4]) + 1
    result, nodes = scan(project)
    assert [n.ref for n in nodes] == [f"make t{i}" for i in range(4)]
    assert result.skipped == 4  # three over-long lines and the unfinished last one


def test_read_tail_lines_across_blocks(tmp_path: Path) -> None:
    from nexusmem.sources.shell.history import read_tail_lines

    path = tmp_path / "h"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    assert read_tail_lines(path, 3, block=5) == [b"line 97", b"line 98", b"line 99"]
    assert read_tail_lines(path, 500, block=5)[0] == b"line 0"
    path.write_bytes(b"a\nb")  # no final newline
    assert read_tail_lines(path, 1) == [b"b"]


def test_a_log_that_is_a_folder_is_said_and_the_sync_goes_on(project: Path) -> None:
    shell_log_path().mkdir(parents=True)
    result, nodes = scan(project)
    assert nodes == [] and any("is not a file" in note for note in result.notes)


def test_a_log_in_a_folder_nobody_can_write_is_still_read(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only NEXUSMEM_HOME (a read-only mount): the reader's lock needs a side file it could not
    create, and every sync failed with "Read-only file system" while the log itself was readable. The
    commands are read (redacted, since the log could not be rewritten), and the sync succeeds."""
    import errno

    from nexusmem import private

    write_log(line(project, f"pytest src/app.py --token={TOKEN}", exit=1))
    real_open_fd = private.open_fd

    home = shell_log_path().parent

    def read_only(path: Path, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).parent == home:  # every file NexusMem would make or write in NEXUSMEM_HOME
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open_fd(path, flags, *args, **kwargs)

    monkeypatch.setattr(private, "open_fd", read_only)
    summary = sync.sync(project)
    shell = next(s for s in summary.sources if s.name == "shell")
    assert shell.added == 1, summary.describe()
    with open_project(project).open_store() as store:
        (node,) = store.iter_nodes("shell_command")
    assert TOKEN not in node.title and node.title.startswith("pytest src/app.py --token=")


def test_a_failing_command_piped_into_a_filter_is_a_failure(repo: Path) -> None:
    """`pytest … 2>&1 | tee log` that failed was kept as "exit 0" (the status bash reports is tee's, the
    failure only in PIPESTATUS): precheck never warned and "what failed" never listed it."""
    import time

    from helpers import query_json, run_cli

    commit(repo, "tests", {"tests/test_tee.py": "def test_it(): assert False\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    now = int(time.time() * 1000)
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        fh.write(
            line(repo, "pytest tests/test_tee.py 2>&1 | tee out.log", now - 60_000, exit=0, pipestatus=[1, 0])
        )
        fh.write(line(repo, "yes | head -1", now - 30_000, exit=0, pipestatus=[141, 0]))  # head stopped it
    unsynced = run_cli("-C", str(repo), "precheck", "--files", "tests/test_tee.py")
    assert "`pytest tests/test_tee.py 2>&1 | tee out.log` failed (exit 1)" in unsynced.stderr
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [it["title"] for it in query_json(repo, "what failed today")["items"]]
    assert "pytest tests/test_tee.py 2>&1 | tee out.log (exit 1)" in titles
    assert not [t for t in titles if t.startswith("yes | head")]
    synced = run_cli("-C", str(repo), "precheck", "--files", "tests/test_tee.py")
    assert "failed (exit 1)" in synced.stderr


@pytest.mark.parametrize(
    ("command", "exit_code", "pipestatus", "stored"),
    [
        ("pytest 2>&1 | tee out.log", 0, [1, 0], 1),
        ("make |& tail -20", 0, [2, 0], 2),
        ("cat missing.txt | tee copy.txt", 0, [1, 0], 1),
        ("{ false; } | tee log.txt", 0, [1, 0], 1),  # a group: its `;` is inside the first stage
        ("for f in a b; do make -C $f; done | tee log", 0, [2, 0], 2),  # a loop: its `;` are inside it
        ("case $x in a) false;; esac | cat", 0, [1, 0], 1),  # `a)` ends a pattern, not a subshell
        ("echo done if | tee log", 0, [1, 0], 1),  # reserved words only where a command starts
        ("if [ -f f ]; then grep -n TODO f; fi | cat", 0, [1, 0], 0),  # grep's no match, in a compound
        ("case $x in a) diff a b;; *) make;; esac | cat", 0, [1, 0], 0),  # diff's, or make's 1: unknown
        ("for f in a b; do grep -q x $f && pytest $f; done | tee log", 0, [1, 0], 1),  # pytest's, as likely
        ("( [ -d tests ] && pytest -q tests ) 2>&1 | tee log", 0, [1, 0], 1),  # a list: by its last command
        ("{ grep -q TODO f || ruff check .; } | cat", 0, [1, 0], 1),  # `||`: ruff ran, and failed
        ("{ grep -q a f && diff a b; } | cat", 0, [1, 0], 0),  # every command of it answers
        ("time grep nomatch a | cat", 0, [1, 0], 0),  # behind a word that runs it, grep is grep
        ("sudo -u app nice -n 5 grep x f | tee hits", 0, [1, 0], 0),
        ("git -C sub grep nomatchxyz | cat", 0, [1, 0], 0),  # `git grep` is a grep
        ("git status | cat", 0, [1, 0], 1),
        ("time make | cat", 0, [2, 0], 2),
        ("for f in a b; do grep -q x $f; pytest $f; done | tee log", 0, [1, 0], 1),  # pytest's, last
        ("python3 gen.py | head -3", 0, [1, 0], 0),  # cut off by head: Python's BrokenPipeError exits 1
        ("pytest | head -5 | tee log", 0, [1, 0, 0], 0),  # head stopped it before tee
        ("grep -n deprecated src/cache.py | tail -3", 0, [1, 0], 0),  # no match is an answer, not a failure
        ("grep -rn x src | tee hits.txt", 0, [2, 0], 2),  # grep's 2 is an error
        ("cargo test | less", 0, [101, 0], 0),  # a pager quit early
        ("yes | head -1", 0, [141, 0], 0),
        ("seq 1 1000000 | head -1", 141, [141, 0], 0),  # pipefail: only SIGPIPE's status
        ("python3 gen.py | head -3", 1, [1, 0], 1),  # pipefail: the user asked for the producer's status
        ("grep x f | wc -l", 0, [1, 0], 0),  # wc's count is the answer: not a filter that passes output on
        ("false; true | tee x", 0, [0, 0], 0),  # two pipelines: PIPESTATUS is the last one's
        ("make -v && make test 2>&1 | tee log", 0, [2, 0], 2),  # the last pipeline's failure
        ("false && make | tee log", 1, [1], 1),  # the last pipeline never ran
        ("a | b || make | tee log", 0, [3, 0, 0], 0),  # a pipestatus of another length: another's
        ("sh <<'X' | tee log\necho a; exit 4\nX\n", 0, [4, 0], 4),  # a here-document's `;` is text
        ("make | tee log  # one; two", 0, [2, 0], 2),  # a comment's `;` too
        ("echo 'a | b' | cat", 0, [0, 0], 0),
        # The quotes of a `$(…)` inside double quotes start afresh: its `;` is no operator, and a `'` in
        # its quotes opens nothing (each was misread by the scans other than the one for the last pipeline).
        ('if true; then grep -c "$(echo "x;y")" f; fi | cat', 0, [1, 0], 0),  # grep's, not `y")"`'s
        ("{ pytest $(ls | grep test_); } | tee log", 0, [1, 0], 1),  # pytest's, not the `$(…)`'s grep
        (
            'm="$(printf "%s" "don\'t")"; python3 - <<EOF | tee log\nimport sys; sys.exit(9)\nEOF\n',
            0,
            [9, 0],
            9,
        ),
        ("sh <<'X' | tee log  # it's\necho a; exit 4\nX\n", 0, [4, 0], 4),  # a comment's quote opens none
        ('{ cat <<<"a" > f\nmake; } | tee log', 0, [2, 0], 2),  # a here-string has no body
        # One stage alone: a 1 that grep, diff, `test` or `[` answered with is no failure, as behind `| cat`.
        ("grep -n TODO notes.txt", 1, [1], 0),
        ("diff a notes.txt", 1, [1], 0),
        ("time grep -q x f", 1, None, 0),  # no pipestatus (an agent's line, an older hook)
        ("doas grep -q x f", 1, None, 0),  # doas, time -p, /usr/bin/env: launchers as precheck reads them
        ("time -p grep -q x f", 1, [1], 0),
        ("/usr/bin/env LC_ALL=C grep -n x f", 1, [1], 0),
        ("[ -f setup.py ];", 1, [1], 0),  # a trailing `;` starts nothing
        ("if [ -f f ]; then grep -n TODO f; fi", 1, [1], 0),  # a compound: its branch's last command
        ("grep x f <<EOF\na; make\nEOF\n", 1, [1], 0),  # a here-document's `;` is text
        ("grep -rn x src", 2, [2], 2),  # grep's 2 is an error
        ("make", 1, [1], 1),
        ("pytest -q tests/test_grep.py", 1, [1], 1),
        ("for f in a b; do grep -q x $f; make $f; done", 1, [1], 1),  # make's, last
        ("grep -q x f; make", 1, [1], 1),  # two commands: the 1 is make's
        ("cd docs && grep -n TODO notes.txt", 1, [1], 0),  # a list: by its last command, as in a compound
        ("grep -n TODO notes.txt | sort; grep -c x f", 1, [1], 0),  # the last pipeline's
        ("false && grep x f | tee log", 1, [1], 1),  # the last pipeline never ran: false's 1
        ("! grep -q x f", 1, [1], 1),  # grep found it: the `!` made that a failure
    ],
)
def test_the_status_a_pipeline_is_stored_with(
    command: str, exit_code: int, pipestatus: list[int], stored: int
) -> None:
    """What a person's pipeline counts as: a failure hidden behind `| tee` or `| tail` is one; a producer
    `head` or a pager cut off, or SIGPIPE under pipefail, is none (they read as failures in the first fix)."""
    from nexusmem.sources.shell.agentcmd import pipeline_status

    assert pipeline_status(command, exit_code, pipestatus) == stored


def test_leaving_the_shell_is_no_failure(repo: Path) -> None:
    """fish logs the builtin `exit` with the status the command before it left (`false`, then `exit`: a line
    `"command":"exit","exit":1`), so "what failed today" listed `exit (exit 1)`; bash and zsh do not log it.
    A line that is only `exit` or `logout` is read with its status unknown; the line on disk stays."""
    import time

    from helpers import query_json, run_cli

    commit(repo, "init", {"a.txt": "a\n"})
    now = int(time.time() * 1000)
    fish = {"shell": "fish", "pipestatus": [1]}
    log = write_log(
        line(repo, "false", now - 50_000, exit=1, **fish),
        line(repo, "exit", now - 40_000, exit=1, **fish),
        line(repo, "logout", now - 30_000, exit=1, **fish),
        line(repo, "exit 3", now - 20_000, exit=3, shell="fish", pipestatus=[3]),
        line(repo, "make; exit", now - 10_000, exit=2, pipestatus=[2]),  # make's status: a failure
    )
    before = log.read_bytes()
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = sorted(it["title"] for it in query_json(repo, "what failed today")["items"])
    assert titles == ["false (exit 1)", "make; exit (exit 2)"], titles
    commands = {it["title"] for it in query_json(repo, "what did I run")["items"]}
    assert {"exit (exit unknown)", "logout (exit unknown)", "exit 3 (exit unknown)"} <= commands, commands
    assert log.read_bytes() == before


def test_starting_an_interactive_shell_is_no_failure(repo: Path) -> None:
    """An interactive shell's status is its last command's: `what failed today` listed `fish --private (exit
    1)` and `bash (exit 1)`. A line that only starts an interactive shell (no script, no -c) is read with
    its status unknown, as `exit` is; a script or a command string run by a shell keeps its status."""
    import time

    from helpers import query_json, run_cli

    commit(repo, "init", {"a.txt": "a\n"})
    now = int(time.time() * 1000)
    nested = ["bash", "fish --private", "zsh -l", "sh", "dash -i", "/bin/bash --norc -i", "ksh", "bash -o vi"]
    # ... written another way: through env, command or a variable set for it, or a root shell.
    nested += [
        "env bash",
        "TERM=xterm bash",
        "command zsh",
        "env -i bash --norc",
        "sudo -s",
        "sudo -i",
        "su -",
        "sudo -u app bash",
        "sudo -u app -s",
    ]
    log = write_log(
        *(line(repo, command, now - 90_000 + 1000 * n, exit=1) for n, command in enumerate(nested)),
        line(repo, "bash deploy.sh", now - 30_000, exit=2),
        line(repo, "sh -c 'exit 3'", now - 20_000, exit=3),
        line(repo, "bash -lc make", now - 10_000, exit=4),
        line(repo, "env FOO=1 bash run.sh", now - 9_000, exit=5),
        line(repo, "sudo -u app bash run.sh", now - 8_000, exit=6),
    )
    before = log.read_bytes()
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = sorted(it["title"] for it in query_json(repo, "what failed today")["items"])
    assert titles == [
        "bash -lc make (exit 4)",
        "bash deploy.sh (exit 2)",
        "env FOO=1 bash run.sh (exit 5)",
        "sh -c 'exit 3' (exit 3)",
        "sudo -u app bash run.sh (exit 6)",
    ], titles
    from nexusmem.sources.shell.logline import parse_log_line

    read = [parse_log_line(raw) for raw in before.splitlines()]
    assert [(it.command, it.exit) for it in read if it is not None] == [
        *((command, None) for command in nested),
        ("bash deploy.sh", 2),
        ("sh -c 'exit 3'", 3),
        ("bash -lc make", 4),
        ("env FOO=1 bash run.sh", 5),
        ("sudo -u app bash run.sh", 6),
    ]
    assert log.read_bytes() == before


def test_a_shell_started_behind_any_launcher_is_no_failure(repo: Path) -> None:
    """The words that only launch a shell are those precheck and linking pass (sources.shell.launchers):
    `time bash`, `nice -n 5 zsh`, `env -u HOME bash`, `/usr/bin/env -i bash`, `nohup bash`, `sudo -E --
    bash`, `sudo -u app bash`, `doas -u www bash` were listed by "what failed today" with the status of the last
    command typed in the shell. A script and `command -v bash` (which only says where bash is) keep theirs."""
    import time

    from helpers import query_json, run_cli

    commit(repo, "init", {"a.txt": "a\n"})
    now = int(time.time() * 1000)
    nested = ["time bash", "nice -n 5 zsh", "env -u HOME bash", "/usr/bin/env -i bash", "nohup bash"]
    nested += ["sudo -E -- bash", "doas -s", "doas -u www bash"]
    kept = [
        ("time bash deploy.sh", 2),
        ("command -v bash", 1),
        ("doas -u www bash x.sh", 6),
        ("nice make", 2),
    ]
    write_log(
        *(line(repo, command, now - 90_000 + 1000 * n, exit=1) for n, command in enumerate(nested)),
        *(line(repo, command, now - 30_000 + 1000 * n, exit=code) for n, (command, code) in enumerate(kept)),
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = sorted(it["title"] for it in query_json(repo, "what failed today")["items"])
    assert titles == sorted(f"{command} (exit {code})" for command, code in kept), titles
