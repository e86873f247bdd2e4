"""NexusMem's own command lines (`clear; nexusmem query "…" | tee out.txt`, `nexusmem sync -q`) are the
question being asked, never an answer: not in any listing of the newest work. Real repositories, a real
interactive bash with the prompt hook, the real CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from nexusmem import sync
from nexusmem.paths import shell_log_path

from helpers import commit, query_json, run_cli, typed_in_bash

OWN_LINES = (
    'clear; nexusmem query "how did I fix the test_easter_western failure" 2>&1 | tee out.txt',
    "nexusmem sync -q",
    "nexusmem precheck --files dateutil/easter.py",
    'nexusmem query "which tests failed" ; echo rc=$?',
)


def agent_ran(repo: Path, *commands: str) -> None:
    """COMMANDS run by Claude Code in REPO a minute ago, as its hook logs them."""
    now = int(time.time() * 1000) - 60_000
    base = {"cwd": str(repo), "shell": "claude-code", "session": "c1", "v": 1}
    lines: list[dict[str, Any]] = [
        {**base, "ts": now + n, "command": command, "exit": 0, "author": "claude-code",
         "author_kind": "agent", "call_id": f"toolu_{n}"}
        for n, command in enumerate(commands)
    ]  # fmt: skip
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def commands(found: dict[str, Any]) -> list[str]:
    """The commands an answer lists, but the line typed_in_bash ends its typing with."""
    items = found["items"]
    return [i["ref"] for i in items if i["kind"] == "shell_command" and "done-typing" not in i["ref"]]


def test_newest_work_lists_no_line_of_nexusmem_itself(repo: Path) -> None:
    commit(repo, "Fix the western easter date", {"easter.py": "E = 1\n"})
    agent_ran(repo, "python -m pytest dateutil/test/test_easter.py -q")
    typed_in_bash(repo, "python3 -c 'print(1)'", *OWN_LINES)
    sync.sync(repo)
    for question in ("what did I run today", "what have I been doing", "what did I run"):
        found = query_json(repo, question)
        refs = commands(found)
        assert not [ref for ref in refs if "nexusmem" in ref], (question, refs)
        assert refs[:2] == ["python3 -c 'print(1)'", "python -m pytest dateutil/test/test_easter.py -q"], (
            question,
            refs,
        )
    for extra in ((), ("--author", "claude")):
        found = query_json(repo, "what has claude been doing", *extra)
        refs = commands(found)
        # Claude's work alone, with --author or without: the question names Claude (without, the listing was
        # everyone's newest work, the user's own command first).
        assert refs == ["python -m pytest dateutil/test/test_easter.py -q"], (extra, refs, found["notes"])
        named = "the question names claude-code: read as --author claude-code"
        assert (named in found["notes"]) is not bool(extra), (extra, found["notes"])
    text = run_cli("-C", str(repo), "query", "what did I run today").output
    assert "nexusmem" not in text.split("\n", 1)[1], text


# Lines of NexusMem's own, read the way `nexusmem query "…" --json | jq .items` is: a script given inline to an
# interpreter that reads the pipe, and a lookup of where `nexusmem` is.
PIPED_OWN_LINES = (
    'nexusmem query "easter western" --json | python3 -c "import json,sys; print(len(json.load(sys.stdin)))"',
    "nexusmem query \"easter western\" --json | python -c 'import json,sys; json.load(sys.stdin)'",
    "nexusmem query \"easter western\" --json | node -e 'process.stdin.pipe(process.stdout)'",
    "nexusmem query \"easter western\" --json | ruby -e 'puts STDIN.read.size'",
    "which nexusmem; nexusmem --version; nexusmem status",
    "type nexusmem && command -v nexusmem",
)


def test_a_nexusmem_line_piped_into_an_inline_script_is_nexusmems_own(repo: Path) -> None:
    commit(repo, "Fix the western easter date", {"easter.py": "E = 1\n"})
    sync.sync(repo)
    # Work of the user's: an inline script run after NexusMem, not fed by it.
    work = "nexusmem sync; python3 -c 'import json,sys; print(json.dumps(sys.argv))'"
    typed_in_bash(repo, *PIPED_OWN_LINES, work)
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    # The user's line and the one typed_in_bash ends its typing with wait for a sync; NexusMem's own do not.
    assert status["unsynced_commands"] == 2, status["unsynced_commands"]
    sync.sync(repo)
    for extra in ((), ("--author", "me")):
        found = query_json(repo, "json sys stdin process ruby python node nexusmem version", *extra)
        assert commands(found) == [work], (extra, commands(found))
        found = query_json(repo, "what did I run today", *extra)
        assert commands(found) == [work], (extra, commands(found))


# A lookup of NexusMem's among setup commands that only print or set the scene (echo, pwd, ls, cd, export).
SETUP_OWN_LINES = (
    "echo $HOME $NEXUSMEM_HOME; which nexusmem; pwd",
    "export LC_ALL=C; ls; command -v nexusmem",
    "cd . && nexusmem --version; pwd",
)


def test_a_lookup_of_nexusmem_among_setup_commands_is_nexusmems_own(repo: Path) -> None:
    """`query --author me "which nexusmem version"` answered `echo $HOME $NEXUSMEM_HOME; which nexusmem; pwd
    (exit 0)` first: the question being asked, not an answer."""
    commit(repo, "Bump the version to 2.9.0", {"VERSION": "2.9.0\n"})
    sync.sync(repo)
    work = "git tag -l 'v2*' --sort=version:refname"
    typed_in_bash(repo, *SETUP_OWN_LINES, work)
    sync.sync(repo)
    for extra in ((), ("--author", "me")):
        found = query_json(repo, "which nexusmem version", *extra)
        assert not [ref for ref in commands(found) if "nexusmem" in ref], (extra, commands(found))
        found = query_json(repo, "what did I run today", *extra)
        assert commands(found) == [work], (extra, commands(found))


def test_a_question_whose_subject_is_an_agent_reads_as_its_author(repo: Path) -> None:
    """ "what did codex run today" without --author listed the user's own commands first, as "what have I been
    doing" does; "what did I ask claude …" is still the user's questions."""
    commit(repo, "Fix the western easter date", {"easter.py": "E = 1\n"})
    agent_ran(repo, "python -m pytest dateutil/test/test_easter.py -q")
    typed_in_bash(repo, "python3 -c 'print(1)'")
    sync.sync(repo)
    found = query_json(repo, "what did codex run today")
    assert commands(found) == [], found["items"]
    assert "the question names codex: read as --author codex" in found["notes"], found["notes"]
    text = run_cli("-C", str(repo), "query", "what has Claude Code been doing").stdout
    assert "python -m pytest dateutil/test/test_easter.py -q" in text and "print(1)" not in text, text
    assert "note: the question names claude-code: read as --author claude-code" in text, text
    mine = query_json(repo, "what have I been doing")
    assert commands(mine)[0] == "python3 -c 'print(1)'", commands(mine)
    assert not any("read as --author" in note for note in mine["notes"]), mine["notes"]
