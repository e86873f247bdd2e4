"""Commands whose text is not valid UTF-8, in real bash, zsh and fish under a pty.

The hooks write each invalid byte as the text \\xNN. They used to find those bytes one at a time, each time
copying (bash, zsh) or searching (fish) the whole rest of the text: a command with 10,000 invalid bytes
kept the prompt away for seconds (bash 1.6 s, zsh and fish far longer). The escape functions now do work
in proportion to the text. Their output must not change: each is run beside the function as it was (kept
in tests/fixtures/escape_reference/) on random text, and the two must agree byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import time
from pathlib import Path

import pexpect
import pytest
from test_shell_hooks import SHELLS, Shell, needs

REFERENCE = Path(__file__).parent / "fixtures" / "escape_reference"

# Runs the hook's escape and the reference on every file in $NX_DIR/in, writing what each gave to new/ and
# ref/ (zsh: also new0/, its path without the zsh/regex module).
DRIVER = {
    "bash": """
for f in "$NX_DIR"/in/*; do
    mapfile -d '' s <"$f"  # `read` drops a \x01 that follows a byte >= 0x80
    __nexusmem_escape "$s"
    printf '%s' "$__nexusmem_json" >"$NX_DIR/new/${f##*/}"
    __nexusmem_escape_reference "$s"
    printf '%s' "$__nexusmem_json" >"$NX_DIR/ref/${f##*/}"
done
""",
    "zsh": """
for f in $NX_DIR/in/*; do
    IFS= read -r -d '' s <$f
    __nexusmem_escape $s
    printf '%s' $__nexusmem_json >$NX_DIR/new/${f:t}
    __nexusmem_regex=0
    __nexusmem_escape $s
    printf '%s' $__nexusmem_json >$NX_DIR/new0/${f:t}
    __nexusmem_regex=1
    __nexusmem_escape_reference $s
    printf '%s' $__nexusmem_json >$NX_DIR/ref/${f:t}
done
""",
    "fish": """
for f in $NX_DIR/in/*
    set -l s (string collect -N <$f)
    set -l name (string split -r -m1 / -- $f)[-1]
    printf '%s' (__nexusmem_escape $s) >$NX_DIR/new/$name
    printf '%s' (__nexusmem_escape_reference $s) >$NX_DIR/ref/$name
end
""",
}

# fish's old escape searched the whole text once per invalid byte: its reference is kept to shorter text.
SIZES = {"bash": (80, 2500, 9000), "zsh": (80, 2500, 9000), "fish": (40, 600, 1500)}
CASES = 60


# Overlong forms, UTF-16 surrogates, code points above U+10FFFF.
BAD_FORMS = [b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x8f\xbf\xbf"]
BAD_FORMS += [b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf7\xbf\xbf\xbf"]


def _valid_char(rng: random.Random) -> bytes:
    while True:
        low, high = rng.choice([(0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF), (0x4E00, 0x9FFF)])
        code = rng.choice([low, high, rng.randint(low, high)])
        # UTF-16 surrogates are no characters; fish keeps U+F600-U+F7FF and U+FDD0-U+FDEF for itself.
        if not (0xD800 <= code <= 0xDFFF or 0xF600 <= code <= 0xF7FF or 0xFDD0 <= code <= 0xFDEF):
            return chr(code).encode()


def _random_text(rng: random.Random, length: int) -> bytes:
    """Valid UTF-8 of every length, ASCII with quotes and backslashes, tabs, newlines and other control
    characters, stray bytes, runs of continuation bytes, cut-off characters, overlong forms, surrogates and
    code points above U+10FFFF, mixed at random."""
    out = bytearray()
    while len(out) < length:
        kind = rng.choices(
            ["ascii", "control", "valid", "cjk", "byte", "continuations", "cut", "bad form"],
            weights=[5, 2, 4, 1, 5, 2, 2, 1],
        )[0]
        if kind == "ascii":
            out += bytes(rng.choice(b"abcxyz019 _-./'\"\\$*[]") for _ in range(rng.randint(1, 12)))
        elif kind == "control":
            out.append(rng.choice(b"\t\n\r\x01\x07\x1b\x1f\x7f"))
        elif kind == "valid":
            out += _valid_char(rng)
        elif kind == "cjk":
            out += "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(10, 300))).encode()
        elif kind == "byte":
            out.append(rng.randint(0x80, 0xFF))
        elif kind == "continuations":
            out += bytes(rng.randint(0x80, 0xBF) for _ in range(rng.randint(1, 9)))
        elif kind == "cut":
            char = _valid_char(rng)
            out += char[: rng.randint(1, len(char) - 1)] if len(char) > 1 else b"\xc3"
        else:
            out += rng.choice(BAD_FORMS)
    return bytes(out)


def _as_read(raw: bytes) -> str:
    """RAW as NexusMem reads it: valid UTF-8 as text, each invalid byte as the text \\xNN."""
    text = raw.decode("utf-8", "surrogateescape")
    return re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_escape_matches_the_old_function_on_random_bytes(kind: str, tmp_path: Path) -> None:
    rng = random.Random(f"nexusmem-escape-{kind}")
    short, long, longest = SIZES[kind]
    inputs = {}
    for i in range(CASES):
        size = rng.choice([rng.randint(1, short), rng.randint(short, long), rng.randint(long, longest)])
        inputs[f"{i:03d}"] = _random_text(rng, size)
    for sub in ("in", "new", "new0", "ref"):
        (tmp_path / sub).mkdir()
    for name, raw in inputs.items():
        (tmp_path / "in" / name).write_bytes(raw)
    (tmp_path / "driver").write_text(DRIVER[kind], encoding="utf-8")

    sh = Shell(kind, env={"NX_DIR": str(tmp_path)})
    try:
        sh.type(f"source '{REFERENCE / f'nexusmem.{kind}'}'; source '{tmp_path / 'driver'}'")
        sh.wait_lines(1, timeout=120)
    finally:
        sh.close()

    outputs = ["new", "new0"] if kind == "zsh" else ["new"]
    for name, raw in inputs.items():
        want = (tmp_path / "ref" / name).read_bytes()
        # The reference gives the text NexusMem reads: the comparison is not between two empty files.
        assert json.loads('"' + want.decode("utf-8") + '"') == _as_read(raw), name
        for out in outputs:
            got = (tmp_path / out / name).read_bytes()
            assert got == want, f"{kind} {out}/{name}: {len(raw)} bytes, {raw[:200]!r}..."


# Ctrl-X n puts the file $NX_CMD on the command line, as a paste does. (Typed, readline puts a byte that could
# start a character after the byte that follows it, and a tab completes.)
LOAD_LINE = {
    "bash": """bind -x '"\\C-xn": READLINE_LINE=$(<"$NX_CMD"); READLINE_POINT=${#READLINE_LINE}'""",
    "zsh": "__nx_load() { BUFFER=$(<$NX_CMD); CURSOR=$#BUFFER }; zle -N __nx_load; bindkey '^Xn' __nx_load",
    "fish": "bind \\cxn 'commandline -r -- (string collect -N <$NX_CMD)'",
}


def _drain_until_quiet(sh: Shell, quiet: float = 0.5) -> None:
    """Read what the terminal shows until it has been quiet for QUIET seconds."""
    with contextlib.suppress(pexpect.TIMEOUT, pexpect.EOF):
        while True:
            sh.child.read_nonblocking(65536, timeout=quiet)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_command_with_10000_invalid_bytes_is_recorded_without_holding_the_prompt(
    kind: str, tmp_path: Path
) -> None:
    """File names from a Latin-1 disk pasted into one command, 10,000 bytes that are not UTF-8: from Enter to
    the line in the log took 3.7 s in bash, 7.7 s in zsh and longer still in fish; well under a second now."""
    names = b"caf\xe9\tna\xefve r\xe9sum\xe9.txt " * 2500
    (tmp_path / "command").write_bytes(b"true '" + names + b"'")
    sh = Shell(kind, env={"NX_CMD": str(tmp_path / "command")})
    try:
        sh.run(LOAD_LINE[kind])
        sh.child.send(b"\x18n")
        _drain_until_quiet(sh)
        before = len(sh.lines())
        start = time.monotonic()
        sh.child.send(b"\r")
        line = sh.wait_lines(before + 1, timeout=120)[before]
        elapsed = time.monotonic() - start
    finally:
        sh.close()
    assert line["command"] == "true '" + "caf\\xe9\tna\\xefve r\\xe9sum\\xe9.txt " * 2500 + "'"
    assert elapsed < 1.5, f"{kind}: {elapsed:.2f} s from Enter to the recorded line"
