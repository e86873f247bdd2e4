"""The one rule for "was this failure resolved?", shared by precheck and the failure → fix linker."""

from __future__ import annotations

from nexusmem.resolved import DAY_MS, retries

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
