"""Questions about the asker's own recent runs, as a person asks them: the run named by what kind of run it
is ("once CI went red"), the latest time it broke and the first failure of that episode, a run the
question's words do not hold, and a time said with a half ("two and a half hours ago"). A real repository,
the shell-log contract's lines, a real sync, the CLI's JSON."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from helpers import commit, query_json, run_cli, write_commands, write_recent

DAY = 86_400
NOW = int(time.time())


@pytest.fixture(autouse=True)
def clock() -> None:
    """NOW for this test: its session's times are counted back from when it starts, not from when the module
    was imported (under xdist, minutes earlier: "forty minutes ago" no longer held its run)."""
    global NOW
    NOW = int(time.time())


def synced(repo: Path, session: str, old: Sequence[tuple[int, str, int]] = ()) -> Path:
    """REPO with one old commit, OLD (ts ms, command, exit) and SESSION in the shell log, synced."""
    commit(repo, "Add the app", {"app.py": "PORT = 8080\n"}, when=NOW - 400 * DAY)
    if old:
        write_commands(repo, old)
    write_recent(repo, session, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def first_note(found: dict[str, object]) -> str:
    notes = found["notes"]
    assert isinstance(notes, list)
    return next((n for n in notes if n.startswith("first:")), "")


def test_a_kind_of_run_names_the_run_the_question_is_about(repo: Path) -> None:
    """ "Once CI went red" names `gh run watch`, whose words it does not share; a test run that failed
    after it, holding the question's "sentry", is not the run that went red."""
    synced(
        repo,
        """
        180 1 gh run watch
        175 0 gh run view --log-failed
        170 1 env -u SENTRY_DSN pytest tests/test_config.py
        160 0 git commit -am 'treat a missing SENTRY_DSN as reporting off'
        150 0 git push origin main
        """,
    )
    found = query_json(
        repo, "once CI went red on the sentry setting about three hours ago, what did I look at first"
    )
    assert first_note(found).startswith("first: what was run after `gh run watch` (exit 1,"), found["notes"]
    assert found["items"][0]["title"] == "gh run view --log-failed (exit 0)"


def test_the_latest_time_it_broke_and_the_first_failure_of_that_time(repo: Path) -> None:
    """ "As soon as the session suite broke": the suite broke months ago too, in a run whose words match the
    question better, and today it failed, then a narrowed rerun failed too. The answer is what followed
    today's first failure: the narrowed rerun."""
    old = [(NOW * 1000 - 120 * DAY * 1000, "npm run test:session-suite", 1)]
    old += [(NOW * 1000 - 120 * DAY * 1000 + 60_000, "npm install", 0)]
    synced(
        repo,
        """
        490 1 pytest tests/test_session.py
        480 1 pytest tests/test_session.py -k cookie_expiry -x -vv
        470 0 git log -p -3 -- src/session
        440 0 pytest tests/test_session.py
        """,
        old,
    )
    found = query_json(repo, "as soon as the session suite broke, what did I run next?")
    assert first_note(found).startswith("first: what was run after `pytest tests/test_session.py` (exit 1,")
    assert found["items"][0]["title"] == "pytest tests/test_session.py -k cookie_expiry -x -vv (exit 1)"


def test_the_newest_runs_of_a_command_run_every_day_are_candidates(repo: Path) -> None:
    """`docker compose up -d`, run on three hundred days: the candidates cut on the words alone kept the
    oldest runs, and the one that failed half an hour ago was not among them. A question about what was done
    next (no time said) asks again within the last month."""
    old = [(NOW * 1000 - (400 - day) * DAY * 1000, "docker compose up -d", 0) for day in range(300)]
    synced(
        repo,
        """
        40 1 docker compose up -d
        38 0 docker ps --filter publish=8080
        36 0 docker compose -p demo-old down
        34 0 docker compose up -d
        """,
        old,
    )
    found = query_json(repo, "once docker compose up failed, what did I do to get it going")
    assert first_note(found).startswith("first: what was run after `docker compose up -d` (exit 1,")
    assert [it["title"] for it in found["items"][:2]] == [
        "docker ps --filter publish=8080 (exit 0)",
        "docker compose -p demo-old down (exit 0)",
    ]


def test_which_run_of_a_kind_failed_when(repo: Path) -> None:
    """ "Which migration command failed two and a half hours ago": no word of it is in `alembic upgrade
    head`, yet a migration is what alembic runs, and two and a half hours ago is a time."""
    synced(
        repo,
        """
        200 0 alembic upgrade head
        150 1 alembic upgrade head
        145 0 alembic downgrade -1
        20 1 pytest tests/test_app.py
        """,
    )
    found = query_json(repo, "which migration command failed two and a half hours ago")
    assert found["items"][0]["title"] == "alembic upgrade head (exit 1)", found["items"][:3]
    assert any(n.startswith("first: the failed runs of migration") for n in found["notes"]), found["notes"]


def test_a_server_that_would_not_start(repo: Path) -> None:
    """ "The dev server wouldn't start": "wouldn't" and "start" say how it failed, not which run it was."""
    synced(
        repo,
        """
        300 1 python -m app serve --port 8080
        295 0 sudo lsof -iTCP:8080 -sTCP:LISTEN
        290 0 python -m app serve --port 8080
        100 1 pytest tests/test_app.py
        """,
    )
    found = query_json(repo, "the dev server wouldn't start five hours ago, which command was that")
    assert found["items"][0]["title"] == "python -m app serve --port 8080 (exit 1)", found["items"][:3]


def test_what_followed_the_run_that_finally_went_through(repo: Path) -> None:
    """ "Once the migration finally went through": the run that passed after the migration had failed, not
    the later run of it that passed first time, nor the status check between them. No word of the question
    is indexed with the commands ("migration" is not "migrate"): the kind of run alone finds them."""
    synced(
        repo,
        """
        300 1 bin/rails db:migrate
        295 0 bin/rails db:migrate:status
        290 0 bin/rails db:migrate
        285 0 bin/rails db:rollback STEP=3
        280 0 bin/rails db:migrate
        270 0 git add db/migrate
        """,
    )
    found = query_json(repo, "once the migration finally went through, what did I run right after")
    assert found["items"][0]["title"] == "bin/rails db:rollback STEP=3 (exit 0)", found["items"][:3]


def test_a_run_is_of_the_kind_its_longest_runner_says(repo: Path) -> None:
    """`make` alone is a build, but `make lint` is lint: once the build broke, the anchor is the failed
    `cargo build`, not the later `make lint` that failed too."""
    synced(
        repo,
        """
        120 101 cargo build --release
        115 0 rustup update stable
        110 0 cargo build --release
        60 2 make lint
        55 0 ruff check --fix
        """,
    )
    found = query_json(repo, "once the build broke, what did I do next")
    assert first_note(found).startswith("first: what was run after `cargo build --release` (exit 101,"), (
        found["notes"]
    )
    assert found["items"][0]["title"] == "rustup update stable (exit 0)"


def test_a_failure_told_by_how_it_went_names_the_run_before_it(repo: Path) -> None:
    """ "Which training run ran out of GPU memory": what follows the failure says how it went, in words no
    command line holds; the run is what comes before it ("training" names `train.py`). A run that did not
    finish is a failure to list, though "ran out of" is no word of failure."""
    synced(
        repo,
        """
        300 1 python train.py --config configs/vit.yaml
        295 0 nvidia-smi
        290 0 python train.py --config configs/vit.yaml --batch-size 16
        100 1 pytest tests/test_model.py
        """,
    )
    found = query_json(repo, "which training run ran out of GPU memory about five hours ago")
    assert found["items"][0]["title"] == "python train.py --config configs/vit.yaml (exit 1)", found["items"][
        :3
    ]
    # Said in the present, a failure is a question about code, not about a run ("why does it fail on X").
    code = query_json(repo, "why does the training run fail on windows")
    assert not any(n.startswith("first: the failed runs") for n in code["notes"]), code["notes"]


def test_a_tool_named_by_its_everyday_name_and_a_time_in_tens(repo: Path) -> None:
    """ "The maven build" ran `./mvnw`, "my phone" is where `adb` installs, "a config check" is `nginx -t`;
    "forty minutes ago" is a time, said of anything from half an hour to fifty minutes back."""
    synced(
        repo,
        """
        200 1 ./mvnw -U clean install
        190 0 ./mvnw -U clean install
        70 1 sudo nginx -t
        68 0 sudo nginx -t
        44 1 adb install -r app-debug.apk
        36 0 adb install -r app-debug.apk
        10 1 npm run build
        """,
    )
    found = query_json(repo, "which config check failed about an hour ago")
    assert found["items"][0]["title"] == "sudo nginx -t (exit 1)", found["items"][:3]
    found = query_json(repo, "which maven build failed about three hours ago")
    assert found["items"][0]["title"] == "./mvnw -U clean install (exit 1)", found["items"][:3]
    found = query_json(repo, "which install onto my phone failed about forty minutes ago")
    assert found["items"][0]["title"] == "adb install -r app-debug.apk (exit 1)", (
        found["notes"],
        found["items"][:3],
    )


def test_the_full_suite_and_a_formatting_check(repo: Path) -> None:
    """ "The full test suite" is a run of the whole, not the narrowed rerun that failed later; "the
    formatting check complained" names `cargo fmt --check`, which it shares one word with, as clippy."""
    synced(
        repo,
        """
        300 1 bundle exec rspec
        298 0 bundle exec rspec spec/models/user_spec.rb
        200 1 cargo fmt --check
        198 0 cargo fmt
        195 0 cargo fmt --check
        100 1 bundle exec rspec spec/jobs/mailer_job_spec.rb
        95 0 bundle exec rspec spec/jobs/mailer_job_spec.rb
        90 1 cargo clippy --all-targets -- -D warnings
        85 0 git status
        """,
    )
    found = query_json(repo, "right after the full test suite failed, what did I run?")
    assert first_note(found).startswith("first: what was run after `bundle exec rspec` (exit 1,"), found[
        "notes"
    ]
    assert found["items"][0]["title"] == "bundle exec rspec spec/models/user_spec.rb (exit 0)"
    found = query_json(repo, "right after the formatting check complained, what did I run")
    assert found["items"][0]["title"] == "cargo fmt (exit 0)", found["items"][:3]


def test_with_a_time_asked_the_command_its_words_name(repo: Path) -> None:
    """ "About an hour and a half ago the export script died": the script is `nightly_export.sh` run under
    an empty environment, which no word of the ranking's first results names as a whole; the commands of
    that time that hold its words, split and inflected, do (the one that failed, as it reports a failure).
    An upload is what `rsync` does, and "access denied" and an HTTP error are a run's failure."""
    synced(
        repo,
        """
        100 127 env -i /bin/sh -c /opt/app/bin/nightly_export.sh
        97 0 command -v psql
        90 0 sudo install -m 755 scripts/nightly_export.sh /opt/app/bin/nightly_export.sh
        60 23 rsync -av public/ deploy@web:/var/www/docs/
        57 0 ssh deploy@web 'ls -ld /var/www/docs'
        50 0 rsync -av public/ deploy@web:/var/www/docs/
        40 22 curl -fsSI https://staging.example.org/
        38 0 ssh deploy@web 'sudo tail -n 50 /var/log/nginx/error.log'
        """,
    )
    found = query_json(
        repo,
        "about an hour and a half ago the export script died when I ran it without env, what did I try next",
    )
    assert found["items"][0]["title"] == "command -v psql (exit 0)", found["items"][:3]
    found = query_json(
        repo, "right after the docs upload got access denied, what was the first thing I checked"
    )
    assert found["items"][0]["title"] == "ssh deploy@web 'ls -ld /var/www/docs' (exit 0)", found["items"][:3]
    found = query_json(
        repo, "right after the staging site started answering 502 an hour ago, where did I look first"
    )
    assert found["items"][0]["title"].startswith("ssh deploy@web 'sudo tail"), found["items"][:3]


def test_how_a_run_was_got_working(repo: Path) -> None:
    """ "How did I finally get npm ci passing": no fix word, no failure word, yet the answer is what was
    done between the last failed `npm ci` and the one that passed: the commit made then, then the commands,
    nearest the passing run first. "Got rid of the terraform state lock": the run is named by its program.
    A run that shares one word of an argument with the question is not the run it names."""
    commit(
        repo,
        "fix(deps): pin react-dom to the 18 line for the router's peer range",
        {"package.json": '{"dependencies": {"react-dom": "18.3.1"}}\n'},
        when=NOW - 975 * 60,
    )
    synced(
        repo,
        """
        1000 1 npm ci
        990 1 rm -rf node_modules && npm install
        985 0 npm explain react-dom
        970 0 npm ci
        300 1 terraform plan
        297 0 terraform force-unlock -force 6f1c2e9a
        295 0 terraform plan
        200 1 kubectl -n staging rollout status deploy/order-service
        190 0 kubectl -n staging rollout undo deploy/order-service
        185 0 kubectl -n staging rollout status deploy/order-service
        100 1 pytest -q
        """,
    )
    found = query_json(repo, "how did I finally get npm ci passing")
    assert first_note(found).startswith("first: what was done before `npm ci` passed"), found["notes"]
    titles = [it["title"] for it in found["items"]]
    assert titles[:2] == [
        "fix(deps): pin react-dom to the 18 line for the router's peer range",
        "npm explain react-dom (exit 0)",
    ], titles[:4]
    found = query_json(repo, "how did I get rid of the terraform state lock")
    assert found["items"][0]["title"] == "terraform force-unlock -force 6f1c2e9a (exit 0)", found["items"][:3]
    found = query_json(repo, "how did I get the container-based order tests working again")
    assert not first_note(found).startswith("first: what was done before"), found["notes"]


def test_a_run_named_among_the_work_of_a_time(repo: Path) -> None:
    """ "Which push did I do about an hour ago": the work of that time is listed, and the push it names
    comes first among it, not the newest command of that time."""
    synced(
        repo,
        """
        75 0 git push origin main
        70 0 sudo nginx -t
        65 0 sudo systemctl reload nginx
        """,
    )
    found = query_json(repo, "which push did I do about an hour ago")
    assert found["items"][0]["title"] == "git push origin main (exit 0)", found["items"][:3]


def test_the_newest_commands_of_a_window_oldest_first(repo: Path) -> None:
    """What the anchor of a timed "what did I do next" reads: the window's newest commands, oldest first."""
    from nexusmem import project

    synced(repo, "\n".join(f"{minutes} 0 echo {minutes}" for minutes in (50, 40, 30, 20, 10)))
    with project.load(repo).open_store(readonly=True) as store:
        every = store.shell_commands_between(0, 2**62)
        assert [row[1] for row in every][-5:] == ["echo 50", "echo 40", "echo 30", "echo 20", "echo 10"]
        assert store.shell_commands_between(0, 2**62, newest=2) == every[-2:]
        assert store.shell_commands_between(0, every[-3][2], newest=2) == every[-4:-2]


def test_the_full_suite_is_a_run_naming_no_file(repo: Path) -> None:
    """`pytest` alone is the full suite; `pytest tests/test_cache.py -x`, which failed after the suite had
    passed again, is part of it (its file is the first word after the program)."""
    synced(
        repo,
        """
        60 1 pytest
        58 0 git stash
        55 0 pytest
        40 1 pytest tests/test_cache.py -x
        35 0 git diff
        """,
    )
    found = query_json(repo, "right after the full test suite failed, what did I run?")
    assert first_note(found).startswith("first: what was run after `pytest` (exit 1,"), found["notes"]
    assert found["items"][0]["title"] == "git stash (exit 0)", found["items"][:3]


def test_a_program_run_over_ssh_is_a_run_of_that_program(repo: Path) -> None:
    """`ssh -p 2222 edge-1 'sudo nginx -t'` runs nginx's config check on edge-1: ssh, its options and its host
    only say where. "Which config check failed" lists it, and "after the nginx check failed on edge-1"
    anchors on it, not on a login to the host."""
    synced(
        repo,
        """
        300 1 ssh -p 2222 edge-1 'sudo nginx -t'
        296 0 ssh edge-1 'sudo tail -n 50 /var/log/nginx/error.log'
        292 0 ssh -p 2222 edge-1 'sudo nginx -t'
        200 0 ssh edge-1
        100 1 pytest tests/test_app.py
        """,
    )
    found = query_json(repo, "which config check failed about five hours ago")
    assert found["items"][0]["title"] == "ssh -p 2222 edge-1 'sudo nginx -t' (exit 1)", found["items"][:3]
    assert any(n.startswith("first: the failed runs of config check") for n in found["notes"]), found["notes"]
    # "The proxy" is the program the check ran (intent.PROGRAM_NAMES), on the host, not ssh.
    proxy = query_json(repo, "which proxy config test failed about five hours ago")
    assert proxy["items"][0]["title"] == "ssh -p 2222 edge-1 'sudo nginx -t' (exit 1)", proxy["items"][:3]
    then = query_json(repo, "after the nginx config check failed on edge-1, what did I look at?")
    assert first_note(then).startswith(
        "first: what was run after `ssh -p 2222 edge-1 'sudo nginx -t'` (exit 1,"
    )
    assert found["items"][0]["title"] != then["items"][0]["title"]
    assert then["items"][0]["title"].startswith("ssh edge-1 'sudo tail -n 50"), then["items"][:3]


def test_a_tool_named_by_its_store_or_platform_and_a_server_run_with_go_run(repo: Path) -> None:
    """ "The CocoaPods install" is `pod install`, "the TestFlight run" a fastlane lane run through
    `bundle exec` (the runner only starts it), and "the server" a service started with `go run`."""
    synced(
        repo,
        """
        300 1 pod install --project-directory=ios
        296 0 pod repo update
        290 0 pod install --project-directory=ios
        250 1 bundle exec fastlane ios beta
        245 0 bundle exec fastlane ios beta
        200 1 go run ./cmd/ordersvc
        198 0 lsof -nP -iTCP:50051 -sTCP:LISTEN
        100 1 pytest tests/test_app.py
        """,
    )
    pods = query_json(repo, "the CocoaPods install that failed about five hours ago")
    assert pods["items"][0]["title"] == "pod install --project-directory=ios (exit 1)", pods["items"][:3]
    upload = query_json(repo, "which TestFlight run failed about four hours ago")
    assert upload["items"][0]["title"] == "bundle exec fastlane ios beta (exit 1)", upload["items"][:3]
    then = query_json(repo, "what did I run right after the server complained the port was already taken")
    assert first_note(then).startswith("first: what was run after `go run ./cmd/ordersvc` (exit 1,"), then[
        "notes"
    ]
    assert then["items"][0]["title"] == "lsof -nP -iTCP:50051 -sTCP:LISTEN (exit 0)", then["items"][:3]
