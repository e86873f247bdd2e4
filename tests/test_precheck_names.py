"""Which staged files a failed command names for precheck, by a module's bare name: a word of the command,
but not one inside a URL, an absolute path outside the repository, or what a remote or container tool was
asked about (a real repository, real hook-log lines, `precheck --strict` as the hook runs it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers import commit, git, run_cli, run_script, write_commands

SHOP = {
    "src/shop/cart.py": "ITEMS = []\n",
    "src/shop/network.py": "def fetch(url): ...\n",
    "src/shop/pricing.py": "RATE = 0.2\n",
    "src/shop/coupons.py": "CODES = {}\n",
    "src/shop/orders.py": "ORDERS = []\n",
    "src/shop/stock.py": "STOCK = {}\n",
    "tests/test_cart.py": "def test(): pass\n",
    "tests/test_pricing.py": "def test(): pass\n",
}


def _shop(repo: Path, lines: list[tuple[str, int]]) -> None:
    """The shop, LINES (command, exit) logged a minute apart an hour ago and synced, every module staged."""
    now_s = int(time.time())
    commit(repo, "feat: shop", SHOP, when=now_s - 7200)
    write_commands(
        repo, [((now_s - 3600 + 60 * n) * 1000, line, code) for n, (line, code) in enumerate(lines)]
    )
    run_cli("-C", str(repo), "sync")
    for path in SHOP:
        if path.startswith("src/"):
            (repo / path).write_text(SHOP[path] + "# changed\n", encoding="utf-8")
    git(repo, "add", "-A")


def _warned(repo: Path) -> set[tuple[str, str]]:
    data = json.loads(run_script("precheck", "--json", cwd=repo).stdout)
    return {(f["path"], f["command"]) for f in data["findings"] if f["kind"] == "failure"}


def test_a_url_a_path_outside_the_repository_and_a_container_or_hosts_names_are_no_module(repo: Path) -> None:
    """The walkthrough: `curl -sf http://127.0.0.1:9/api/cart` (exit 7), `docker logs network` (exit 1) and
    `ls /var/log/pricing` (exit 2) each warned for src/shop/cart.py, network.py, pricing.py, and `precheck
    --strict` refused every commit touching them for 30 days."""
    _shop(
        repo,
        [
            ("curl -sf http://127.0.0.1:9/api/cart", 7),
            ("docker logs network", 1),
            ("make -s && sudo docker logs network --since 5m | tail -3", 1),
            ("ls /var/log/pricing", 2),
            ("curl -s localhost:8080/coupons", 7),
            ("kubectl logs deploy/orders --tail 50", 1),
            ("ssh deploy@shop.example 'systemctl restart stock'", 255),
            ("tail -f ~/logs/stock", 1),
            # The folder a line changes into is no module either (a re-check: `cd sub && make` warned for sub.py).
            ("cd network && make", 2),
            ("( cd pricing && make )", 2),
            ("pushd coupons && make; popd", 2),
        ],
    )
    assert _warned(repo) == set()
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 0 and strict.stderr == "", strict.stderr


def test_a_module_named_by_a_test_run_still_warns_through_a_container_or_an_absolute_path(repo: Path) -> None:
    """What the bare name is for stays: a test file or a module path the command runs, also inside a
    container (`docker compose run … pytest tests/test_cart.py`) or by the repository's absolute path."""
    _shop(repo, [])
    write_commands(
        repo,
        [
            ((int(time.time()) - 600) * 1000, "docker compose run --rm app pytest tests/test_cart.py", 1),
            ((int(time.time()) - 500) * 1000, f"pytest {repo}/tests/test_pricing.py", 1),
            ((int(time.time()) - 400) * 1000, "python -m shop.coupons --selftest", 1),
            ((int(time.time()) - 300) * 1000, "pytest -k network", 1),
        ],
    )
    assert _warned(repo) == {
        ("src/shop/cart.py", "docker compose run --rm app pytest tests/test_cart.py"),
        ("src/shop/pricing.py", f"pytest {repo}/tests/test_pricing.py"),
        ("src/shop/coupons.py", "python -m shop.coupons --selftest"),
        ("src/shop/network.py", "pytest -k network"),
    }
    assert run_script("precheck", "--strict", cwd=repo).returncode == 1


def test_what_a_launched_remote_or_container_tool_is_asked_about_is_no_module_either(repo: Path) -> None:
    """The tool a line runs is found past every word that only launches it, as the shell log and failure
    linking find it (sources.shell.launchers): `sudo -u deploy docker logs network`, `nice -n 10 ssh …`,
    `time -p curl …`, `doas -u www kubectl …`, `env -i PATH=/usr/bin docker …` warned for network.py,
    stock.py, coupons.py and orders.py, their launcher's option taken for the tool. A test run behind a
    launcher still names its module, and pytest's exit 5 (no tests collected) behind one is no failure."""
    _shop(
        repo,
        [
            ("sudo -u deploy docker logs network", 1),
            ("nice -n 10 ssh deploy@shop.example 'systemctl restart stock'", 255),
            ("time -p curl -s localhost:8080/coupons", 7),
            ("doas -u www kubectl logs deploy/orders --tail 50", 1),
            ("env -i PATH=/usr/bin docker logs network", 1),
            ("nohup sudo -E docker logs stock", 1),
            ("time -p pytest tests/test_pricing.py -k nothing_matches", 5),
        ],
    )
    assert _warned(repo) == set()
    write_commands(
        repo,
        [
            ((int(time.time()) - 600) * 1000, "sudo -u deploy pytest tests/test_cart.py", 1),
            ((int(time.time()) - 500) * 1000, "nice -n 5 pytest -k coupons", 1),
        ],
    )
    assert _warned(repo) == {
        ("src/shop/cart.py", "sudo -u deploy pytest tests/test_cart.py"),
        ("src/shop/coupons.py", "nice -n 5 pytest -k coupons"),
    }


EASTER = {
    "dateutil/easter.py": "def easter(year): ...\n",
    "docs/samples/easter.py": "print('a sample')\n",
    "tests/test_easter.py": "from dateutil.easter import easter\n",
    "dateutil/rrule.py": "RULES = []\n",
    "tests/test_rrule.py": "from dateutil.rrule import RULES\n",
}


def _checked(repo: Path, *files: str) -> set[tuple[str, str]]:
    data = json.loads(run_script("precheck", "--json", "--files", *files, cwd=repo).stdout)
    return {(f["path"], f["command"]) for f in data["findings"] if f["kind"] == "failure"}


def test_a_failure_is_not_given_to_another_file_of_the_same_name(repo: Path) -> None:
    """The walkthrough (dateutil): `pytest tests/test_easter.py` failing made `precheck --files
    docs/samples/easter.py` warn, a sample that shares only its name with dateutil/easter.py. A module's bare
    name ties a failure to a file only when one tracked file bears that name; a path the command names (from
    the folder it ran in) always does."""
    now_s = int(time.time())
    commit(repo, "feat: easter", EASTER, when=now_s - 7200)
    run_cli("-C", str(repo), "sync")
    ago = (now_s - 600) * 1000
    write_commands(
        repo,
        [
            (ago, "pytest tests/test_easter.py", 1),
            (ago + 1000, "pytest -k easter", 1),
            (ago + 2000, "pytest tests/test_rrule.py", 1),
            (ago + 3000, "python easter.py", 1),
        ],
    )
    write_commands(repo, [(ago + 4000, "python easter.py", 2)], cwd=repo / "docs" / "samples")
    found = _checked(repo, "docs/samples/easter.py", "dateutil/easter.py", "dateutil/rrule.py")
    assert found == {
        ("docs/samples/easter.py", "python easter.py"),  # run in docs/samples: that file, by its path
        # The test file says which easter.py it tests: `from dateutil.easter import easter`.
        ("dateutil/easter.py", "pytest tests/test_easter.py"),
        ("dateutil/rrule.py", "pytest tests/test_rrule.py"),  # the one rrule.py: still named by its test
    }, found


def test_a_test_file_and_its_module_checked_together_both_warn(repo: Path) -> None:
    """`precheck --files calc.py tests/test_calc.py` after `pytest tests/test_calc.py` failed warned for the
    test file alone: the name matcher found `test_calc` and never `calc` inside it, which `--files calc.py`
    alone does find. Each warns, once."""
    now_s = int(time.time())
    commit(
        repo,
        "feat: calc",
        {"calc.py": "def add(a, b): ...\n", "tests/test_calc.py": "from calc import add\n"},
        when=now_s - 7200,
    )
    run_cli("-C", str(repo), "sync")
    write_commands(repo, [((now_s - 600) * 1000, "pytest tests/test_calc.py", 1)])
    alone = run_script("precheck", "--files", "calc.py", cwd=repo)
    together = run_script("precheck", "--files", "calc.py", "tests/test_calc.py", cwd=repo)
    said = [line for line in together.stderr.splitlines() if "`pytest tests/test_calc.py`" in line]
    assert [line.split(":", 1)[0] for line in said] == ["calc.py", "tests/test_calc.py"], together.stderr
    assert said[0] in alone.stderr.splitlines(), alone.stderr
    assert "2 warning(s) for 2 file(s)" in together.stderr, together.stderr


def _easter_failures(
    repo: Path, modules: dict[str, str], tests: dict[str, str], lines: list[tuple[str, int, str]]
) -> None:
    """MODULES committed and synced, then TESTS written and staged (new: no sync has read their imports),
    and LINES (command, exit, folder run in) logged ten minutes ago."""
    now_s = int(time.time())
    commit(repo, "feat: easter", modules, when=now_s - 7200)
    run_cli("-C", str(repo), "sync")
    for name, text in tests.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    for n, (line, code, folder) in enumerate(lines):
        write_commands(repo, [((now_s - 600 + n) * 1000, line, code)], cwd=repo / folder)


def _warnings(repo: Path, *files: str) -> list[str]:
    """What `precheck --files FILES` says, a line per warning."""
    said = run_script("precheck", "--files", *files, cwd=repo).stderr
    return [line for line in said.splitlines() if " failed (exit " in line]


def test_a_failing_test_file_says_which_file_of_a_shared_name_it_tests(repo: Path) -> None:
    """With dateutil/easter.py and docs/samples/easter.py both tracked, a new test failing
    (`pytest tests/test_easter.py`, no sync has read its imports yet) warned for neither by name; its import
    lines (`from dateutil import easter`, `from dateutil.easter import easter`, `import dateutil.easter`) say
    it tests dateutil/easter.py, which it now warns for, the sample still for nothing. The test file is found
    from the folder the command ran in; one importing neither (`import easter`, on a path of its own) or no
    test file at all (`pytest -k easter`) ties it to neither."""
    _easter_failures(
        repo,
        {
            "dateutil/__init__.py": "",
            "dateutil/easter.py": "def easter(year): ...\n",
            "docs/samples/easter.py": "print('a sample')\n",
        },
        {
            "tests/test_easter.py": "import datetime\n\nfrom dateutil import easter\n",
            "tests/test_easter_dates.py": "from dateutil.easter import (\n    EASTER_WESTERN,\n    easter,\n)\n",
            "tests/test_easter_julian.py": "import os, dateutil.easter as e  # julian\n",
            "tests/test_easter_sample.py": "import easter  # docs/samples on sys.path\n",
        },
        [
            ("pytest tests/test_easter.py", 1, "."),
            ("pytest test_easter_dates.py::test_2024", 1, "tests"),
            ("python -m pytest -x tests/test_easter_julian.py", 1, "."),
            ("pytest tests/test_easter_sample.py", 1, "."),
            ("pytest -k easter", 1, "."),
        ],
    )
    day = time.strftime("%Y-%m-%d", time.localtime(time.time() - 600))
    assert _warnings(repo, "docs/samples/easter.py", "dateutil/easter.py") == [
        f"dateutil/easter.py: `python -m pytest -x tests/test_easter_julian.py` failed (exit 1) on {day} and"
        " was never seen passing — run it before committing",
        f"dateutil/easter.py: `pytest test_easter_dates.py::test_2024` in tests failed (exit 1) on {day} and"
        " was never seen passing — run it before committing",
        f"dateutil/easter.py: `pytest tests/test_easter.py` failed (exit 1) on {day} and was never seen passing"
        " — run it before committing",
    ]


def test_the_imports_name_a_file_by_its_package_path_under_a_src_layout_too(repo: Path) -> None:
    """A src/ layout, the module checked with its test (whose own warning it had, by its path): `from
    dateutil.legacy import easter` is about src/dateutil/legacy/easter.py, not src/dateutil/easter.py nor
    docs/samples/easter.py (each bearing the name too)."""
    _easter_failures(
        repo,
        {
            "src/dateutil/__init__.py": "",
            "src/dateutil/easter.py": "def easter(year): ...\n",
            "src/dateutil/legacy/__init__.py": "",
            "src/dateutil/legacy/easter.py": "def easter(year): ...\n",
            "docs/samples/easter.py": "print('a sample')\n",
        },
        {"tests/test_easter_legacy.py": "from dateutil.legacy import easter\n"},
        [("pytest tests/test_easter_legacy.py", 1, ".")],
    )
    said = _warnings(
        repo,
        "src/dateutil/easter.py",
        "src/dateutil/legacy/easter.py",
        "docs/samples/easter.py",
        "tests/test_easter_legacy.py",
    )
    assert [line.split(": `", 1)[0] for line in said] == [
        "src/dateutil/legacy/easter.py",
        "tests/test_easter_legacy.py",
    ], said
