"""The isolated environment every test runs in: HOME, NEXUSMEM_HOME and git's config in temp dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest

GITCONFIG = (
    "[user]\n\tname = Test User\n\temail = test@example.com\n"
    "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    '[protocol "file"]\n\tallow = always\n'
)


def isolate(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HOME, NEXUSMEM_HOME and git's global config at HOME; drop every other GIT_* variable."""
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(GITCONFIG, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NEXUSMEM_HOME", str(home / ".nexusmem"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    # The agents' own homes: transcripts are read from under HOME only.
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key in list(os.environ):
        if key.startswith("GIT_") and key not in {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"}:
            monkeypatch.delenv(key)


@contextmanager
def local_zone(name: str) -> Iterator[ZoneInfo]:
    """This process's local time zone set to NAME, as `TZ=NAME nexusmem …` sets a command's (TZ, then
    time.tzset()), and the one before restored after; processes started meanwhile inherit it. Yields the
    zone, to reckon what its days are. Skips the test where the zone cannot be set (Windows, no tz data)."""
    if not hasattr(time, "tzset"):
        pytest.skip("TZ is read by time.tzset, which Windows lacks")
    try:
        zone = ZoneInfo(name)
    except ZoneInfoNotFoundError:
        pytest.skip(f"no time zone data for {name}")
    old = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        if datetime.now().astimezone().utcoffset() != datetime.now(zone).utcoffset():
            pytest.skip(f"the C library does not know the time zone {name}")
        yield zone
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def since_midnight(now: float) -> int:
    """Seconds from the start of NOW's local day (TZ's, else the system's) to NOW (epoch seconds)."""
    return int(now - datetime.combine(datetime.fromtimestamp(now).date(), dtime()).timestamp())


def clear_of_midnight(seconds: float, zone: ZoneInfo | None = None) -> None:
    """Return once the local day (ZONE's; this process's local zone by default) has more than SECONDS left,
    sleeping past its midnight first when it has fewer: a test that reckons "today" when it starts and asks
    about it up to SECONDS later must not see the day change in between. It waits SECONDS at most, in
    SECONDS / 86,400 of runs."""
    now = time.time()
    start = datetime.fromtimestamp(now, zone) if zone else datetime.fromtimestamp(now)
    tomorrow = datetime.combine(start.date() + timedelta(days=1), dtime(), tzinfo=zone)
    left = tomorrow.timestamp() - now  # naive (no ZONE): the local midnight, DST included
    if left <= seconds:
        time.sleep(left + 1)


def unreadable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make every file named NAME fail to read (PermissionError), in this process: chmod 000 cannot stop
    root, and these tests may run as root."""
    real_read = Path.read_bytes

    def failing_read(self: Path) -> bytes:
        if self.name == name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", failing_read)


def read_only_runner(state: Path) -> list[str] | None:
    """A command prefix under which STATE is read-only, or None: root ignores permission bits, so it needs
    a private read-only bind mount (unshare); anyone else gets chmod."""
    if os.geteuid() != 0:
        state.chmod(0o500)
        return []
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            f"mount --bind '{state}' '{state}' && mount -o remount,bind,ro '{state}'",
        ],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        return None
    mount = f"mount --bind '{state}' '{state}' && mount -o remount,bind,ro '{state}' && exec \"$0\" \"$@\""
    return ["unshare", "-m", "sh", "-c", mount]


def as_a_user_runner() -> list[str] | None:
    """A command prefix under which file permission bits hold as they do for a user, or None: anyone but root
    runs as they are; root runs without the capabilities that let it ignore them (setpriv drops
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), so a 0400 file it owns is read-only to it as to its owner."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        return None
    drop = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None
