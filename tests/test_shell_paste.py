"""A long pasted command, in a real shell under a pty: recorded whole, without holding the prompt.

bash's hook tested a line's end with `*[})]*([[:space:]])`, which tried the `*(…)` at every `}` of the line,
and escaped quotes and control characters with `${s//…/…}`, which goes over the rest of the text again for
each one it replaces: `curl -d '<54 KB of minified JSON>' URL`, 2,400 `}`, kept the next prompt away for 4 s
(100 KB of quoted tabs and newlines for 4-16 s). zsh's hook had the second fault, in its escape and in its
test for a blank line: 2-3 s for those tabs and newlines. All now cost in proportion to the line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_shell_hooks import Shell, needs
from test_shell_invalid_bytes import LOAD_LINE, _drain_until_quiet

ITEMS = 1200


def _enter_to_line(sh: Shell, key: bytes | None, text: str) -> tuple[dict[str, object], float]:
    """Seconds from Enter to the command's line in the log: KEY loads the command line, else TEXT is typed."""
    if key is not None:
        sh.child.send(key)
        _drain_until_quiet(sh)
    else:
        sh.child.send(text.encode())
    before = len(sh.lines())
    start = time.monotonic()
    sh.child.send(b"\r")
    line = sh.wait_lines(before + 1, timeout=120)[before]
    return line, time.monotonic() - start


JSON = json.dumps(
    [{"id": i, "name": f"item{i}", "tags": {"a": i}} for i in range(ITEMS)], separators=(",", ":")
)
COMMANDS = {
    "json": f"true -s -d '{JSON}' http://127.0.0.1:1/api",  # 54 KB, 2,400 `}`
    "json, trailing blanks": f"true -s -d '{JSON}' http://127.0.0.1:1/api  ",
    "tabs": "true '" + "a\tb\t" * 25_000 + "'",  # 100 KB, 50,000 control characters
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
@pytest.mark.parametrize("case", list(COMMANDS))
def test_a_long_pasted_command_is_recorded_without_holding_the_prompt(
    kind: str, case: str, tmp_path: Path
) -> None:
    command = COMMANDS[case]
    (tmp_path / "command").write_text(command, encoding="utf-8")
    sh = Shell(kind, env={"NX_CMD": str(tmp_path / "command")})
    try:
        sh.run(LOAD_LINE[kind])
        _, short = _enter_to_line(sh, None, "true short")
        line, long = _enter_to_line(sh, b"\x18n", command)
    finally:
        sh.close()
    assert line["command"] in (command, command.rstrip())
    assert line["exit"] == 0 and line["pipestatus"] == [0]
    # The same shell's time for a short command, plus a second: 4 s before in bash, 2-3 s in zsh (tabs).
    assert long < short + 1.0, (
        f"{kind}: {long:.2f} s from Enter to the recorded line ({short:.2f} s for `true`)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash",)])
def test_the_paste_benchmark_readme_quotes_runs(kind: str, tmp_path: Path) -> None:
    """README's figures for a long paste come from benchmarks/bench_shell_paste.py: it prints each command's
    time to the log line, to the next prompt and without the hook, and says which shell it skipped."""
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_shell_paste.py"
    out = subprocess.run(
        [sys.executable, str(bench), "--repeat", "1", "--shells", kind, "nexusmem-no-such-shell"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(kind)]
    assert [" ".join(row[1:-6]) for row in rows] == [
        "short `true`",
        "curl -d '<54 KB JSON>'",
        "100 KB of quoted tabs",
    ], out
    for row in rows:
        logged, prompted, bare = (float(row[i]) for i in (-6, -4, -2))
        assert 0 < logged <= prompted + 0.01 and bare > 0, out
        assert logged < 5, f"{kind}: {row}"
    assert "nexusmem-no-such-shell (not installed: skipped)" in out
