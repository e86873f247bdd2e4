"""`nexusmem precheck` without click: the commit hook's path.

The pre-commit hook runs `nexusmem precheck [--strict]` (or `precheck --files -- PATH...` from the pre-commit
framework) on every commit. Importing click (with `inspect`, `uuid`, `platform` and `datetime` behind it)
was about a third of a cold precheck on the 2-core build machine. main() hands the plain forms here;
anything this parser does not know (--help, a mistyped option, --files with --working) goes to the click
command in cli/precheck.py, which owns the help text and the usage errors. Both print through report().
"""

from __future__ import annotations

import errno
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nexusmem.precheck import PrecheckResult

# Characters a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts OSC 52
# clipboard writes and title changes), DEL, C1 controls (0x9b is a one-byte CSI) and the bidi overrides
# that make text read differently from what it is. Stored text is never changed; only what is printed.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# What the environment refuses rather than what NexusMem got wrong: a one-line error, not a crash report.
ENVIRONMENT_ERRNOS = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
)

_FLAGS = {"--strict": "strict", "--json": "as_json", "--working": "working", "--files": "explicit"}


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """TEXT with every control character shown as an escape (\\x1b), so a commit message or a command
    cannot drive the terminal that prints it. JSON output is exact and never goes through this."""
    return _CONTROL.sub(_escape, text)


def _say(text: str) -> None:
    sys.stderr.write(terminal_safe(text) + "\n")
    sys.stderr.flush()


def report(result: PrecheckResult, *, strict: bool, as_json: bool) -> int:
    """Print RESULT (JSON on stdout, warnings on stderr); the exit code: 1 only for --strict with findings."""
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    if not result.checked:
        note = result.reason or "nothing checked"
        _say(f"nexusmem precheck: {note}" + (" (--strict: nothing was checked)" if strict else ""))
        return 0
    if not as_json:
        for finding in result.findings:
            _say(finding.message)
        if result.findings:
            advice = "commit refused (--strict)" if strict else "advisory only"
            _say(
                f"nexusmem precheck: {len(result.findings)} warning(s) for {len(result.files)} file(s) ({advice})"
            )
    return 1 if strict and result.findings else 0


def precheck(args: list[str]) -> int | None:
    """Run `precheck ARGS` and return its exit code, or None when ARGS need click (help, an unknown option,
    a usage error)."""
    opts = dict.fromkeys(_FLAGS.values(), False)
    where: str | None = None
    paths: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            paths.extend(rest)
        elif arg in _FLAGS:
            opts[_FLAGS[arg]] = True
        elif arg == "-C":
            where = next(rest, None)
            if where is None:
                return None
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            paths.append(arg)
    explicit = opts["explicit"] or bool(paths)  # `precheck a.py b.py` means those files
    if explicit and opts["working"]:
        return None  # click says why
    from nexusmem import precheck as library
    from nexusmem.errors import NexusMemError

    try:
        result = library.run(
            Path(where) if where else Path.cwd(), files=paths if explicit else None, working=opts["working"]
        )
    except NexusMemError as exc:
        _say(f"Error: {exc}")
        return 1
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"Error: {where}{exc.strerror or exc}")
        return 1
    return report(result, strict=opts["strict"], as_json=opts["as_json"])
