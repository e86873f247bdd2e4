"""Precheck through what only launches a command: where it ran (`( cd sub && … )`, `env -C sub …`), which
launched runs a later pass resolves, and which launcher words name nothing (a real repository, real
hook-log lines, `precheck --json` as the hook runs it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers import commit, run_cli, run_script, write_commands

SHOP = {
    "check.py": "print('top')\n",
    "sub/check.py": "print('sub')\n",
    "sub/Makefile": "check:\n\tpython3 check.py\n",
    "shop/pricing.py": "RATE = 0.2\n",
    "tests/test_pricing.py": "def test(): pass\n",
}


def _shop(repo: Path) -> int:
    """The shop committed two hours ago and synced; the time (ms) ten minutes ago."""
    now_s = int(time.time())
    commit(repo, "feat: shop", SHOP, when=now_s - 7200)
    run_cli("-C", str(repo), "sync")
    return (now_s - 600) * 1000


def _failures(repo: Path, *files: str) -> list[tuple[str, str]]:
    """(file, command) of each failure `precheck --json` warns about for FILES."""
    data = json.loads(run_script("precheck", "--json", "--files", *files, cwd=repo).stdout)
    assert data["checked"], data["reason"]
    return sorted((f["path"], f["command"]) for f in data["findings"] if f["kind"] == "failure")


def test_the_folder_a_subshells_cd_or_env_chdir_moves_to_is_where_its_paths_are_read(repo: Path) -> None:
    """The walkthrough: `( cd sub && python3 ./check.py )`, `env -C sub python3 ./check.py` and `sudo -u
    nobody env -C sub python3 check.py` failed; precheck warned for the top check.py (which never failed),
    not sub/check.py, and a passing `python check.py` at the top cleared them."""
    ago = _shop(repo)
    failed = [
        "( cd sub && python3 ./check.py )",
        "env -C sub python3 ./check.py",
        "sudo -u nobody env -C sub python3 check.py",
        "env --chdir=sub python3 check.py",
        "sudo -D sub python3 check.py",
    ]
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate(failed)])
    write_commands(repo, [(ago + 60_000, "python check.py", 0), (ago + 61_000, "python3 check.py", 0)])
    expected = sorted(("sub/check.py", line) for line in failed)
    assert _failures(repo, "check.py", "sub/check.py") == expected  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "check.py", "sub/check.py") == expected  # the same from the memory


def _lines(repo: Path, entries: list[tuple[int, str, int, str]]) -> None:
    """Hook lines (ts ms, command, exit, shell) run in REPO, as each shell's hook writes them."""
    from nexusmem.paths import shell_log_path

    shell_log_path().parent.mkdir(parents=True, exist_ok=True)
    with shell_log_path().open("a", encoding="utf-8") as fh:
        for ts, command, code, shell in entries:
            line = {"ts": ts, "cwd": str(repo), "exit": code, "command": command, "shell": shell}
            fh.write(json.dumps({**line, "session": shell, "v": 1}) + "\n")


def test_zsh_and_fish_time_with_an_option_ran_nothing_of_the_command(repo: Path) -> None:
    """The walkthrough: in zsh `time -p pytest -k pricing` is "command not found: -p" (127), in fish a refused
    option (2): pytest never ran, yet precheck warned for pricing. `time` is their keyword and takes no
    option; in bash (and GNU time) `-p` is an option, and its failure is pytest's."""
    ago = _shop(repo)
    _lines(
        repo,
        [
            (ago, "time -p pytest -k pricing", 127, "zsh"),
            (ago + 1000, "time -p pytest -k pricing --tb=no", 2, "fish"),
            (ago + 2000, "time -p pytest -k pricing -q", 1, "bash"),
        ],
    )
    want = [("shop/pricing.py", "time -p pytest -k pricing -q")]
    assert _failures(repo, "shop/pricing.py") == want  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "shop/pricing.py") == want  # the same from the memory


def _retry_links(repo: Path) -> dict[str, list[str]]:
    """Each failed command -> the commands memory linked to it as its passing re-run."""
    from nexusmem.store.db import open_store

    with open_store(repo / ".nexusmem" / "memory.db") as store:
        nodes = {n.id: n for n in store.iter_nodes("shell_command")}
        failed = [i for i, n in nodes.items() if n.meta.get("exit") not in (0, None)]
        out: dict[str, list[str]] = {nodes[i].ref: [] for i in failed}
        for from_id, to_id, relation in store.links_from(failed):
            if relation == "retry":
                out[nodes[from_id].ref].append(nodes[to_id].ref)
    return out


def test_precheck_and_linking_agree_on_the_pass_that_resolves_a_launched_run(repo: Path) -> None:
    """The walkthrough: a later plain `pytest tests/test_pricing.py` pass resolved `nice -n 10 pytest …`,
    `sudo -u nobody pytest …`, `time pytest …` for precheck, but linking made no fix link for them. What
    only launches the run (sudo, nice, time, nohup) is left out for both; what changes it is kept for both:
    `NAME=value` settings and `env -i`, which empties the environment."""
    ago = _shop(repo)
    test = "tests/test_pricing.py"
    launched = [f"nice -n 10 pytest {test}", f"sudo -u nobody pytest {test}", f"time pytest {test}"]
    launched.append(f"nohup pytest {test}")
    changed = [f"FOO=1 pytest {test}", f"env -i PATH=$PATH pytest {test}", f"env -i pytest {test}"]
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate([*launched, *changed])])
    write_commands(repo, [(ago + 60_000, f"pytest {test}", 0)])
    expected = sorted(("shop/pricing.py", line) for line in changed)
    assert _failures(repo, "shop/pricing.py") == expected  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _failures(repo, "shop/pricing.py") == expected  # the same from the memory
    links = _retry_links(repo)
    assert {line: links[line] for line in launched} == {line: [f"pytest {test}"] for line in launched}
    assert {line: links[line] for line in changed} == {line: [] for line in changed}


def test_no_tests_collected_behind_a_common_launcher_is_no_failure(repo: Path) -> None:
    """The walkthrough: `timeout 60 pytest … -k nomatch` (exit 5: no tests collected) warned at commit, as
    plain and `nice -n 10` forms did not: `timeout` was no launcher. So for the other common ones."""
    ago = _shop(repo)
    lines = [
        "timeout 60 pytest tests/test_pricing.py -k nomatch",
        "timeout -s KILL -k 5 2m pytest tests/test_pricing.py -k nomatch",
        "stdbuf -oL -e L pytest tests/test_pricing.py -k nomatch",
        "ionice -c 3 -n 7 pytest tests/test_pricing.py -k nomatch",
        "taskset -c 0,1 pytest tests/test_pricing.py -k nomatch",
        "xvfb-run -a -s '-screen 0 1280x1024x24' pytest tests/test_pricing.py -k nomatch",
        "flock -w 10 /tmp/shop.lock pytest tests/test_pricing.py -k nomatch",
        "setsid -w pytest tests/test_pricing.py -k nomatch",
        "chrt -f 10 pytest tests/test_pricing.py -k nomatch",
        "unbuffer pytest tests/test_pricing.py -k nomatch",
    ]
    write_commands(repo, [(ago + n * 1000, line, 5) for n, line in enumerate(lines)])
    assert _failures(repo, "shop/pricing.py") == []


def test_a_make_target_names_no_module(repo: Path) -> None:
    """The walkthrough: `make -C sub check` (exit 2) warned for check.py and sub/check.py. A make target is
    like a tool's subcommand (`npm run build` names no run.py), wherever it stands; a file make is given
    (`-f check.mk`) or a setting's value (`FILE=check.py`) still names what it names."""
    ago = _shop(repo)
    (repo / "sub" / "check.mk").write_text("all:\n", encoding="utf-8")
    targets = ["make -C sub check", "make -j4 check pricing", "sudo make -s check", "cd sub && make check"]
    named = ["make -f sub/check.mk all", "make lint FILE=check.py"]
    write_commands(repo, [(ago + n * 1000, line, 2) for n, line in enumerate([*targets, *named])])
    assert _failures(repo, "check.py", "sub/check.py", "shop/pricing.py", "sub/check.mk") == [
        ("check.py", "make lint FILE=check.py"),  # by its path where it ran (test_a_setting_s_value…)
        ("sub/check.mk", "make -f sub/check.mk all"),
    ]


def test_a_setting_s_value_names_a_file_by_its_path_where_the_command_ran(repo: Path) -> None:
    """The walkthrough: `make lint FILE=check.py` (exit 2) warned for check.py, sub/check.py and sub/check.mk:
    every file named check. A `NAME=value` setting's value that is a file's name names that file by its
    path as written, from where the command ran (as `-f check.mk` or `python3 check.py` do), not every file
    of its base name; a setting before the command too, and the same once synced."""
    ago = _shop(repo)
    (repo / "sub" / "check.mk").write_text("all:\n", encoding="utf-8")
    top = ["make lint FILE=check.py", "FILE=check.py make lint", "make lint FILE=sub/check.mk"]
    write_commands(repo, [(ago + n * 1000, line, 2) for n, line in enumerate(top)])
    write_commands(repo, [(ago + 5000, "make lint SRC=check.py", 2)], cwd=repo / "sub")
    want = [
        ("check.py", "FILE=check.py make lint"),
        ("check.py", "make lint FILE=check.py"),
        ("sub/check.mk", "make lint FILE=sub/check.mk"),
        ("sub/check.py", "make lint SRC=check.py"),
    ]
    files = ("check.py", "sub/check.py", "sub/check.mk")
    assert _failures(repo, *files) == want  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, *files) == want  # the same from the memory


def test_a_subshell_whose_bracket_is_attached_to_its_cd_runs_where_the_cd_moves(repo: Path) -> None:
    """`(cd sub && python3 ./check.py)` (no space after the bracket) is the subshell `( cd sub && … )` is:
    precheck warned for the top check.py, which never failed, and not for sub/check.py; a pass at the top
    (`python3 check.py`) is another run and clears nothing, the same line passing again clears it."""
    ago = _shop(repo)
    failed = ["(cd sub && python3 ./check.py)", "(env -C sub python3 check.py)", "(cd sub; python3 check.py)"]
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate(failed)])
    write_commands(repo, [(ago + 60_000, "python3 check.py", 0), (ago + 61_000, "python3 ./check.py", 0)])
    expected = sorted(("sub/check.py", line) for line in failed)
    assert _failures(repo, "check.py", "sub/check.py") == expected  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "check.py", "sub/check.py") == expected  # the same from the memory
    write_commands(repo, [(ago + 120_000, "(cd sub && python3 ./check.py)", 0)])
    cleared = [pair for pair in expected if pair[1] != "(cd sub && python3 ./check.py)"]
    assert _failures(repo, "check.py", "sub/check.py") == cleared
