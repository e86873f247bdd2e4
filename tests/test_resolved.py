"""The one rule for "was this failure resolved?", shared by precheck and the failure → fix linker."""

from __future__ import annotations

from nexusmem.resolved import DAY_MS, normalise, retries

T0 = 1_700_000_000_000


def test_first_later_success_of_the_same_command_in_the_same_directory_resolves() -> None:
    commands = [
        ("f1", T0, "pytest  tests/x.py", "/r", 1),
        ("other-dir", T0 + 1, "pytest tests/x.py", "/elsewhere", 0),
        ("same-ms", T0, "pytest tests/x.py", "/r", 0),  # logged in the failure's own millisecond: not later
        ("scraped", T0 + 2, "pytest tests/x.py", None, None),  # no directory, no status: neither
        ("ok1", T0 + 3, " pytest tests/x.py\n", "/r", 0),  # whitespace differs: the same command
        ("ok2", T0 + 4, "pytest tests/x.py", "/r", 0),
    ]
    failures, resolved = retries(commands)
    assert [f[0] for f in failures] == ["f1"]
    assert resolved == {"f1": ("ok1", T0 + 3)}


def test_the_linker_window_bounds_how_much_later_precheck_does_not() -> None:
    commands = [("f", T0, "make", "/r", 2), ("ok", T0 + DAY_MS + 1, "make", "/r", 0)]
    assert retries(commands)[1] == {}
    assert retries(commands, within_ms=DAY_MS + 1)[1] == {"f": ("ok", T0 + DAY_MS + 1)}
    assert retries(commands, within_ms=None)[1] == {"f": ("ok", T0 + DAY_MS + 1)}


def test_a_pass_of_the_whole_file_resolves_a_failed_run_of_one_of_its_tests() -> None:
    """`pytest -q "tests/x.py::test_a"` failed: `pytest -q tests/x.py` passing covers it; a pass of another
    test of the file, of the file with other options, or a failure of the file cleared by a test's pass, not."""
    commands = [
        ("node", T0, 'pytest -q "tests/x.py::test_a"', "/r", 1),
        ("two", T0 + 1, "pytest -q tests/x.py::test_a tests/x.py::TestX::test_b[1-2]", "/r", 1),
        ("opts", T0 + 2, "pytest -x tests/x.py::test_a", "/r", 1),
        ("deselected", T0 + 3, "pytest -q --deselect tests/x.py::test_a", "/r", 1),
        ("file", T0 + 4, "pytest -q tests/x.py", "/r", 1),
        ("test-b", T0 + 5, "pytest -q tests/x.py::test_b", "/r", 0),
        ("b", T0 + 6, "pytest -x tests/x.py::test_a", "/r", 0),
        ("ok", T0 + 7, "pytest -q tests/x.py", "/r", 0),
        ("node-again", T0 + 8, 'pytest -q "tests/x.py::test_a"', "/r", 0),
    ]
    resolved = retries(commands)[1]
    assert resolved == {
        "node": ("ok", T0 + 7),
        "two": ("ok", T0 + 7),
        "opts": ("b", T0 + 6),
        "file": ("ok", T0 + 7),
    }


def test_a_pass_followed_by_and_echo_is_that_commands_pass_and_a_semicolon_echo_is_none() -> None:
    """`pytest -q tests/x.py && echo ok` exits with pytest's status (echo runs only after it passed): its pass
    clears `pytest -q tests/x.py`, and its failure is one of pytest's. `pytest …; echo rc=$?` exits with
    echo's, 0 after a failure too, so it clears nothing; nor does an echo after a pipe (the pipestatus the
    hook reads is echo's) or one that holds more than an echo."""
    commands = [
        ("file", T0, "pytest -q tests/x.py", "/r", 1),
        ("node", T0 + 1, "pytest -q tests/x.py::test_a >/dev/null", "/r", 1),
        ("piped", T0 + 2, "make test", "/r", 2),
        ("written", T0 + 3, "make lint", "/r", 2),
        ("semicolon", T0 + 4, "pytest -q tests/x.py >/dev/null; echo rc=$?", "/r", 0),
        ("or-echo", T0 + 5, "pytest -q tests/x.py || echo failed", "/r", 0),
        ("tee", T0 + 6, "make test | tee log && echo ok", "/r", 0),
        ("redirected", T0 + 7, "make lint && echo ok >> log", "/r", 0),
        ("and-echo-fails", T0 + 8, 'pytest -q tests/x.py::test_a && echo "all && passed"', "/r", 1),
        ("ok", T0 + 9, 'pytest -q tests/x.py >/dev/null && echo "rc=$?" && echo done', "/r", 0),
    ]
    failures, resolved = retries(commands, within_ms=None)
    assert "and-echo-fails" in [f[0] for f in failures]
    assert resolved == {"file": ("ok", T0 + 9), "node": ("ok", T0 + 9), "and-echo-fails": ("ok", T0 + 9)}
    assert normalise("pytest -q x; echo rc=$?") == "pytest -q x; echo rc=$?"
    assert normalise('pytest -k "a && echo b" && echo ok') == 'pytest -k "a && echo b"'
    assert normalise("pytest -q x && echo $(date)") == "pytest -q x && echo $(date)"
