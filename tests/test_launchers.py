"""The one answer to "which word of a command line is its command" (sources.shell.launchers): precheck, the
shell log, failure linking and the questions about runs read it; their own tests check each through its
command. These are the words it passes, as a table."""

from __future__ import annotations

from itertools import pairwise

import pytest

from nexusmem.sources.shell.launchers import (
    command_start,
    launcher_spans,
    moved_folder,
    no_test_failed,
    runs_nexusmem,
    unlaunched,
)


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("pytest tests/test_cart.py", "pytest"),
        ("sudo pytest", "pytest"),
        ("sudo -u deploy pytest tests/test_cart.py", "pytest"),
        ("sudo -udeploy -E pytest", "pytest"),
        ("sudo --user deploy pytest", "pytest"),
        ("sudo --user=deploy pytest", "pytest"),
        ("sudo -Eu deploy pytest", "pytest"),
        ("sudo -- pytest", "pytest"),
        ("doas -u www make", "make"),
        ("env -i FOO=1 pytest", "pytest"),
        ("env -u HOME -C /tmp pytest", "pytest"),
        ("env - make", "make"),
        ("/usr/bin/env FOO= make", "make"),
        ("FOO=1 BAR= make", "make"),
        ("nice -n 10 make", "make"),
        ("nice -n -5 make", "make"),
        ("nice -5 make", "make"),
        ("time -p pytest", "pytest"),
        ("/usr/bin/time -o t.log -v make", "make"),
        ("nohup sudo -E docker logs x", "docker"),
        ("command grep x f", "grep"),
        ("exec -a name prog", "prog"),
        ("builtin cd sub", "cd"),
        # a leading `cd DIR &&` (or `;`) only says where the command runs, in a subshell too
        ("( cd sub && make )", "make"),
        # the subshell's bracket attached to its first word is the same subshell
        ("(cd sub && make)", "make)"),
        ("(cd sub && make check)", "make"),
        ("(sudo -u deploy make)", "make)"),
        ("(FOO=1 make check)", "make"),
        ("(/usr/bin/env -C sub make check)", "make"),
        ("(make check)", "(make"),
        ("cd sub && make check", "make"),
        ("cd sub ; make", "make"),
        ("cd sub; make", "make"),
        ("sudo cd sub && make", "make"),
        ("cd sub", "cd"),
        ("cd sub || make", "cd"),
        ("cd sub &&", "cd"),
        ("{ make; }", "make;"),
        # the common launchers with operands before the command
        ("timeout 60 pytest -k x", "pytest"),
        ("timeout -s KILL -k 5 2m make", "make"),
        ("timeout --signal=TERM --kill-after 5 60 make", "make"),
        ("timeout --preserve-status 10s make", "make"),
        ("stdbuf -oL -e L make", "make"),
        ("stdbuf --output=L make", "make"),
        ("ionice -c 3 -n 7 make", "make"),
        ("ionice -c3 make", "make"),
        ("taskset 0x3 make", "make"),
        ("taskset -c 0,1 make", "make"),
        ("xvfb-run -a pytest", "pytest"),
        ("xvfb-run -a -s '-screen 0 1280x1024x24' pytest", "pytest"),
        ("xvfb-run --server-args=-ac pytest", "pytest"),
        ("flock -w 10 /tmp/shop.lock make", "make"),
        ("flock -x /tmp/l make", "make"),
        ("setsid -w make", "make"),
        ("chrt -f 10 make", "make"),
        ("chrt 5 make", "make"),
        ("caffeinate -i -t 600 make", "make"),
        ("unbuffer -p make", "make"),
        ("timeout 60 sudo -u ci nice -n 5 make", "make"),
        # nothing to run past it: the launcher is the command
        ("sudo -s", "sudo"),
        ("env", "env"),
        ("time", "time"),
        ("sudo -u deploy", "sudo"),
        # it runs nothing of the words after it
        ("command -v pytest", "command"),
        ("env -S 'pytest -x'", "env"),
        ("sudo -e src/cart.py", "sudo"),
        ("sudo -l", "sudo"),
        ("timeout 60", "timeout"),
        ("ionice -c 3 -p 1234", "ionice"),
        ("taskset -p 0x3 1234", "taskset"),
        ("chrt -p 1234", "chrt"),
        ("flock /tmp/l -c 'make x'", "flock"),
        ("FOO=1", None),
    ],
)
def test_the_command_of_a_line_is_past_what_only_launches_it(line: str, command: str | None) -> None:
    words = line.split()
    start = command_start(words)
    assert (words[start] if start < len(words) else None) == command
    spans = list(launcher_spans(words))
    assert (spans[-1][1] if spans else 0) == start
    assert all(a[1] == b[0] for a, b in pairwise(spans))


@pytest.mark.parametrize(
    ("line", "moved"),
    [
        ("( cd sub && python3 ./check.py )", ("sub", 6)),
        ("( cd sub && cd deep && make ) && make", ("sub/deep", 8)),
        ("(cd sub && python3 ./check.py)", ("sub", 5)),
        ("(cd sub && cd deep && make) && make", ("sub/deep", 7)),
        ("(cd sub; make) && make", ("sub", 3)),
        ("(env -C sub make) && make", ("sub", 4)),
        ('(cd "$D" && make)', None),
        ("env -C sub python3 ./check.py", ("sub", 5)),
        ("env -Csub make", ("sub", 3)),
        ("sudo -u nobody env -C sub python3 check.py; make", ("sub", 8)),
        ("env --chdir=sub make", ("sub", 3)),
        ("sudo --chdir sub make | tee log", ("sub", 4)),
        ("sudo -D sub make", ("sub", 4)),
        # the prompt hook records where a plain `cd` ended: the line's words are read from there already
        ("cd sub && make", None),
        ("python3 check.py", None),
        ("env -u C make", None),
        ('( cd "$D" && make )', None),
        ("( cd ~/x && make )", None),
    ],
)
def test_the_folder_a_line_runs_its_command_in(line: str, moved: tuple[str, int] | None) -> None:
    assert moved_folder(line.split()) == moved


@pytest.mark.parametrize(
    ("line", "run"),
    [
        ("nice -n 10 pytest x", "pytest x"),
        ("sudo -u nobody pytest x", "pytest x"),
        ("time -p pytest x", "pytest x"),
        ("nohup sudo -E pytest x", "pytest x"),
        ("env pytest x", "pytest x"),
        # what changes the run stays
        ("FOO=1 nice pytest x", "FOO=1 pytest x"),
        ("env -i PATH=/bin pytest x", "env -i PATH=/bin pytest x"),
        ("env - pytest x", "env - pytest x"),
        ("env -u HOME pytest x", "env -u HOME pytest x"),
        ("env -C sub pytest x", "env -C sub pytest x"),
        ("sudo -D sub pytest x", "sudo -D sub pytest x"),
        ("sudo -uadmin pytest x", "pytest x"),
        ("( cd sub && pytest x )", "( cd sub && pytest x )"),
        ("(cd sub && pytest x)", "(cd sub && pytest x)"),
        ("(nice -n 10 pytest x)", "(nice -n 10 pytest x)"),
        ("pytest x", "pytest x"),
    ],
)
def test_a_run_without_what_only_launches_it(line: str, run: str) -> None:
    assert " ".join(unlaunched(line.split())) == run


@pytest.mark.parametrize(
    ("line", "code", "none_failed"),
    [
        ("pytest -k nomatch", 5, True),
        ("timeout 60 python -m pytest -k x", 5, True),
        ("FOO=1 time -p py.test", 5, True),
        ("pytest -k nomatch", 1, False),
        ("make lint", 5, False),
        ("echo pytest", 5, False),
    ],
)
def test_pytests_exit_5_failed_no_test(line: str, code: int, none_failed: bool) -> None:
    assert no_test_failed(line, code) is none_failed


@pytest.mark.parametrize(
    ("line", "own"),
    [
        ('nexusmem query "which tests failed"', True),
        ('clear; nexusmem query "how did I fix the test_easter_western failure" 2>&1 | tee out.txt', True),
        ("cd api && time nexusmem status | head -3", True),
        ('NEXUSMEM_HOME=/tmp/m env LC_ALL=C nexusmem query "a; b" --json | jq .items', True),
        ("sudo -u me /opt/bin/nexusmem sync && echo done", True),
        ("(cd api && nexusmem sync) |& less", True),
        ("nexusmem sync; pytest", False),  # a run of pytest too: work to sync
        ("nexusmem query x | xargs rm", False),
        ("grep nexusmem notes.txt", False),
        ('git commit -m "nexusmem query; done"', False),
        ('nexusmem query "$(pbpaste)"', False),  # not read: taken as work
        ("python -m nexusmem status", False),
        ('nexusmem query x --json | python3 -c "import json,sys; print(json.load(sys.stdin))"', True),
        ("nexusmem query x --json | python3.12 -c 'import sys' | head", True),
        ("nexusmem query x --json | node -e 'process.stdin.pipe(process.stdout)'", True),
        ("nexusmem query x --json |& ruby -e 'puts STDIN.read'", True),
        ("nexusmem sync; python3 -c 'import app; app.run()'", False),  # not fed by the pipe: work of its own
        ("nexusmem query x | python3 report.py", False),  # a script of the project's
        ("which nexusmem; nexusmem --version; nexusmem status", True),
        ("type -a nexusmem && command -v nexusmem", True),
        ("which nexusmem", True),
        ("which pytest; nexusmem status", False),
        ("command -v pytest", False),
        ("echo $HOME $NEXUSMEM_HOME; which nexusmem; pwd", True),
        ("export LC_ALL=C; ls; command -v nexusmem", True),
        ("cd . && nexusmem --version; pwd", True),
        ("ls; pwd", False),
        ("export PATH=/opt/bin:$PATH; make", False),
    ],
)
def test_a_line_of_nexusmems_own_runs_it_among_shell_noise_only(line: str, own: bool) -> None:
    assert runs_nexusmem(line) is own
