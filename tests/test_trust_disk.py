"""Trust on disk: private files whatever the umask, no raw secret in the hooks' files past a sync, forget
that reaches every copy and never hangs, keyed deny-list hashes, and a second sync that waits.

Real repositories, real SQLite files, real `nexusmem` processes, a real appender process and real bash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from helpers import commit, console_script, git, run_cli

SECRET = "ghp_" + "Q7w9E2r4T6y8U1i3O5p7A9s2D4f6G8h0J2k4"  # a real-shaped GitHub token
VALUE = "Zebracorn-Quux-4417"


def home_dir() -> Path:
    return Path(os.environ["NEXUSMEM_HOME"])


def log_path() -> Path:
    return home_dir() / "shell-history.jsonl"


def line(cwd: Path, command: str, ts: int, **extra: object) -> str:
    obj = {"ts": ts, "cwd": str(cwd), "exit": 0, "command": command, "shell": "bash", "session": "s1", "v": 1}
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False) + "\n"


def append(*lines: str) -> None:
    home_dir().mkdir(parents=True, exist_ok=True)
    with open(log_path(), "a", encoding="utf-8") as fh:
        fh.write("".join(lines))


def cli(
    *args: str, cwd: Path | None = None, timeout: float = 120, umask: int | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed console script in its own process (umask applied in the child)."""

    def setup() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run(
        [console_script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=setup,
        check=False,
    )


def small_repo(repo: Path) -> None:
    base = int(time.time()) - 86_400
    commit(repo, "docs: start", {"README.md": "# Demo\n\nHello.\n"}, when=base)
    commit(repo, f"feat: talk to {VALUE}", {"src/a.py": f"HOST = '{VALUE}'\n"}, when=base + 60)


def modes(directory: Path) -> dict[str, int]:
    found = {directory.name: stat.S_IMODE(directory.lstat().st_mode)}
    for path in directory.rglob("*"):
        if not path.is_symlink():
            found[str(path.relative_to(directory))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_private(directory: Path) -> None:
    for name, mode in modes(directory).items():
        path = directory if name == directory.name else directory / name
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{path}: {oct(mode)} (expected {oct(expected)})"


# ------------------------------------------------------------------------------------ permissions


@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_every_file_is_private_whatever_the_umask(repo: Path, umask: int) -> None:
    small_repo(repo)
    append(line(repo, f"export GITHUB_TOKEN={SECRET}", int(time.time() * 1000)))
    os.chmod(log_path(), 0o666)
    os.chmod(home_dir(), 0o777)
    for args in (["sync", "--no-embed"], ["forget", VALUE, "--yes"], ["scrub"], ["sync", "--no-embed"]):
        proc = cli("-C", str(repo), *args, umask=umask)
        assert proc.returncode == 0, proc.stderr
    names = set(modes(repo / ".nexusmem"))
    assert {"memory.db", "config.json", "sync.run.lock"} <= names, names
    assert not (repo / ".nexusmem" / "deny-key.json").exists()  # the key lives in the user dir only
    assert {"deny-key.json", "shell-history.jsonl", "projects.json"} <= set(modes(home_dir()))
    assert_private(repo / ".nexusmem")
    assert_private(home_dir())


def test_the_folders_made_on_the_way_to_nexusmem_home_are_private_under_umask_000(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NEXUSMEM_HOME=/some/new/deep/path: the folder was 0700 but the ones made on the way to it took the
    umask (0777 under 000): another user could move it aside and put a folder of theirs in its place."""
    small_repo(repo)
    deep = tmp_path / "made" / "on-the-way" / "nm"
    monkeypatch.setenv("NEXUSMEM_HOME", str(deep))
    proc = cli("-C", str(repo), "sync", "--no-embed", umask=0o000)
    assert proc.returncode == 0, proc.stderr
    for folder in (tmp_path / "made", tmp_path / "made" / "on-the-way", deep):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.slow
def test_an_older_install_is_fixed_on_the_next_run(repo: Path) -> None:
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    for directory in (repo / ".nexusmem", home_dir()):
        os.chmod(directory, 0o755)
        for path in directory.iterdir():
            if path.is_file():
                os.chmod(path, 0o644)
    proc = cli("-C", str(repo), "query", "--json", "talk", umask=0o022)  # a read-only command fixes the store
    assert proc.returncode == 0, proc.stderr
    assert_private(repo / ".nexusmem")
    assert cli("-C", str(repo), "sync", "--no-embed", umask=0o022).returncode == 0
    assert_private(home_dir())


def test_a_folder_another_user_owns_is_refused_and_nothing_is_written_into_it(
    repo: Path, tmp_path: Path
) -> None:
    # Someone else's 0777 folder as the repository's .nexusmem (a link a repository can carry) or as
    # NEXUSMEM_HOME: whoever owns it reads what is kept there and can plant links in it.
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user takes root")
    small_repo(repo)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o777)
    os.chown(theirs, 12345, 12345)
    (repo / ".nexusmem").symlink_to(theirs)
    proc = cli("-C", str(repo), "sync", "--no-embed")
    assert proc.returncode == 1 and f"{repo / '.nexusmem'} belongs to another user (uid 12345)" in proc.stderr
    assert list(theirs.iterdir()) == []
    (repo / ".nexusmem").unlink()
    env = {**os.environ, "NEXUSMEM_HOME": str(theirs)}
    proc = subprocess.run(
        [console_script(), "-C", str(repo), "sync", "--no-embed"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 1 and f"{theirs} belongs to another user" in proc.stderr
    assert list(theirs.iterdir()) == []
    assert not (repo / ".nexusmem").exists()  # refused before anything was made: no half-made memory


def test_doctor_says_whose_folder_the_user_folder_is(repo: Path) -> None:
    # "0777, readable by others; fix: chmod 700" was the advice, which its owner alone could follow.
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user takes root")
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    os.chmod(home_dir(), 0o777)
    os.chown(home_dir(), 12345, 12345)
    try:
        doctor = cli("-C", str(repo), "doctor")
    finally:
        os.chown(home_dir(), os.getuid(), os.getgid())
    assert f"{home_dir()} belongs to another user (uid 12345)" in doctor.stdout
    assert "the hooks record nothing" in doctor.stdout and "chmod 700" not in doctor.stdout


def test_a_link_to_a_folder_of_ours_is_used_and_made_private(repo: Path, tmp_path: Path) -> None:
    small_repo(repo)
    mine = tmp_path / "elsewhere"
    mine.mkdir()
    os.chmod(mine, 0o777)
    (repo / ".nexusmem").symlink_to(mine)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert (mine / "memory.db").exists()
    assert_private(mine)


# ------------------------------------------------------------------------- the log, redacted in place


@pytest.mark.slow
def test_sync_redacts_the_log_in_place_and_every_project_still_reads_it_right(
    repo: Path, tmp_path: Path
) -> None:
    small_repo(repo)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "init", {"x.txt": "x\n"})
    now = int(time.time() * 1000)
    append(
        line(repo, "make test", now),
        line(other, f"curl -H 'Authorization: token {SECRET}' https://api.github.com", now + 1),
        line(repo, f"export GITHUB_TOKEN={SECRET}", now + 2, pipestatus=[0], duration_ms=3),
        line(repo, "git status", now + 3),
    )
    size = log_path().stat().st_size
    assert cli("-C", str(other), "sync", "--no-embed").returncode == 0  # the other project syncs first
    raw = log_path().read_bytes()
    assert SECRET.encode() not in raw and len(raw) == size  # same length: every offset still right
    # This project had read nothing yet: it gets all its lines, redacted, once each, and sees no new ones
    # in a second sync.
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    refs = shell_refs(repo)
    assert refs == sorted(["export GITHUB_TOKEN=«redacted:github-token»", "git status", "make test"])
    append(line(repo, "pytest -x", now + 4))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert cli("-C", str(other), "sync", "--no-embed").returncode == 0
    assert shell_refs(repo) == sorted([*refs, "pytest -x"])
    assert len(shell_refs(other)) == 1 and SECRET not in shell_refs(other)[0]


def test_a_secret_anywhere_in_a_log_line_is_gone_after_a_sync(repo: Path) -> None:
    # Not only the command: a folder, a session or an agent's call id may hold one too.
    small_repo(repo)
    now = int(time.time() * 1000)
    append(line(repo, "make test", now, session=f"s-{SECRET}", call_id=f"call-{SECRET}"))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    text = log_path().read_text(encoding="utf-8")
    assert SECRET not in text and "make test" in text
    assert all(json.loads(raw)["command"] == "make test" for raw in text.splitlines())


def test_a_log_edited_in_place_is_redacted_past_where_the_last_pass_stopped(repo: Path) -> None:
    # The redaction pass keeps its own offset (the bookmark). A line deleted in place past the log's first
    # 4 KB moved the lines after it; the pass resumed at its old offset, past the start of the first line
    # appended since, and left that line's secret raw on disk.
    small_repo(repo)
    now = int(time.time() * 1000)
    append(*(line(repo, f"make step-{i:03d}", now + i) for i in range(60)))
    append(line(repo, "make " + "long-target " * 40, now + 60))  # the line that will be deleted
    append(line(repo, "make step-061", now + 61))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    raw = log_path().read_bytes()
    doomed = raw.index(b"long-target")
    start, end = raw.rindex(b"\n", 0, doomed) + 1, raw.index(b"\n", doomed) + 1
    assert start > 4096
    with open(log_path(), "r+b") as fh:  # an editor writing in place: same file, one line shorter
        kept = raw[:start] + raw[end:]
        fh.write(kept)
        fh.truncate(len(kept))
    append(line(repo, f"export GITHUB_TOKEN={SECRET}", now + 100))
    append(*(line(repo, f"git status --step {i}", now + 101 + i) for i in range(6)))
    assert log_path().stat().st_size >= len(raw)  # not shorter: the size alone cannot tell
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert SECRET.encode() not in log_path().read_bytes()
    assert "export GITHUB_TOKEN=«redacted:github-token»" in shell_refs(repo)


@pytest.mark.parametrize(
    "command",
    [
        "export DB_PASSWORD=a API_TOKEN=b SECRET_KEY=c && ./deploy.sh staging",
        "export " + " ".join(f"DB{chr(65 + i)}_PASSWORD=zq" for i in range(12)) + " && ./deploy.sh staging",
        "PGPASSWORD=a1 MYSQL_PWD=b2 DB_PASSWORD=c3 API_TOKEN=d4 SECRET_KEY=e5 make test",
        "mysql -uroot -pS3cretMyPw shop",
    ],
)
def test_a_command_whose_redacted_form_is_longer_keeps_every_field_and_all_its_words(command: str) -> None:
    """Short secrets become longer placeholders, but the line must keep its length so that every project's
    offset stays right. The line used to lose `v`, `pipestatus` and `duration_ms` and then the middle of its
    command ("API_T…"), so what another project stored depended on which one synced first. Now the
    placeholders lose their kind, and where that is not enough each secret becomes as many asterisks."""
    from nexusmem.hygiene.hooklog import redacted_line
    from nexusmem.sources.shell.logline import parse_log_line

    raw = line(Path("/r"), command, 1_700_000_000_000, exit=1, pipestatus=[1], duration_ms=120).encode()
    new = redacted_line(raw)
    assert new and len(new) <= len(raw)
    assert json.loads(new)["v"] == 1
    parsed = parse_log_line(new)
    assert parsed is not None and parsed.exit == 1 and parsed.cwd == "/r"
    assert parsed.pipestatus == [1] and parsed.duration_ms == 120
    assert "…" not in parsed.command
    for secret in ("=a ", "=zq ", "a1", "b2", "c3", "d4", "e5", "S3cretMyPw"):
        assert secret not in parsed.command, (secret, parsed.command)
    # Every word is there in its place, each secret's name before its stand-in.
    kept = parsed.command.split()
    assert len(kept) == len(command.split()), parsed.command
    for typed, now in zip(command.split(), kept, strict=True):
        name = typed.split("=")[0] + "=" if "=" in typed else typed[:2] if typed.startswith("-p") else typed
        assert now.startswith(name), (typed, now)


def test_a_secret_nested_in_another_writers_line_does_not_outlive_the_sync(repo: Path) -> None:
    """The hooks write only flat values, but the log is a contract others write to: a nested value (an
    `env` object) holding a token stayed raw in the log after every sync."""
    small_repo(repo)
    now = int(time.time() * 1000)
    raw = json.loads(line(repo, "make", now))
    raw["env"] = {"OPENAI_API_KEY": SECRET, "TERM": "xterm"}
    append(json.dumps(raw) + "\n", line(repo, "make after-the-nested-one", now + 1))
    size = log_path().stat().st_size
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    data = log_path().read_bytes()
    assert SECRET.encode() not in data and len(data) == size
    assert {"make", "make after-the-nested-one"} <= set(shell_refs(repo))


def test_a_line_too_long_to_read_is_not_left_raw_on_disk(repo: Path) -> None:
    """Lines over 1 MiB are skipped by every reader, and were skipped by the redaction pass too: a token in
    a pasted file stayed raw in the log after every sync. Such a line is now blanked in place."""
    small_repo(repo)
    now = int(time.time() * 1000)
    huge = line(repo, f"echo {'x' * (1 << 20)} {SECRET}", now)
    append(huge, line(repo, "make after-the-long-one", now + 1))
    size = log_path().stat().st_size
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    raw = log_path().read_bytes()
    assert SECRET.encode() not in raw and len(raw) == size
    assert "make after-the-long-one" in shell_refs(repo)


def shell_refs(repo: Path) -> list[str]:
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        return sorted(n.ref for n in store.iter_nodes("shell_command"))


APPENDER = r"""
import os, sys, time
path, rate, seconds, cwd = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
n = 0
start = time.monotonic()
while time.monotonic() - start < seconds:
    # As a hook does: open with O_APPEND, one write of one line, close.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    secret = " SECRET" if n % 7 == 0 else ""
    os.write(fd, ('{"ts":%d,"cwd":"%s","exit":0,"command":"echo line-%06d%s","shell":"bash","session":"load","v":1}\n'
                  % (1700000000000 + n, cwd, n, secret)).encode())
    os.close(fd)
    n += 1
    delay = start + n / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
print(n, n / (time.monotonic() - start))
"""


def start_appender(rate: float, seconds: float, cwd: Path, secret: str) -> subprocess.Popen[str]:
    code = APPENDER.replace("SECRET", secret)
    home_dir().mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", code, str(log_path()), str(rate), str(seconds), str(cwd)],
        stdout=subprocess.PIPE,
        text=True,
    )


def numbered(raw: bytes) -> list[int]:
    found = []
    for text in raw.decode("utf-8").splitlines():
        if text.strip():
            obj = json.loads(text)
            if obj.get("session") == "load":
                found.append(int(obj["command"].split("line-")[1][:6]))
    return found


@pytest.mark.slow
def test_forget_loses_no_line_a_hook_appends_meanwhile(repo: Path, tmp_path: Path) -> None:
    small_repo(repo)
    # A big log, so the rewrite takes long enough for many appends to land during it.
    now = int(time.time() * 1000)
    append(*(line(tmp_path, f"echo filler {i} {'x' * 60}", now + i) for i in range(150_000)))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    appender = start_appender(
        1000.0, 6.0, repo, VALUE
    )  # this project's lines: a forget without --global blanks those only
    time.sleep(0.5)
    for _ in range(3):
        started = time.monotonic()
        proc = cli("-C", str(repo), "forget", VALUE, "--yes")
        assert proc.returncode == 0, proc.stderr
        assert time.monotonic() - started > 0.2  # the rewrite really overlapped the appends
    out, _ = appender.communicate(timeout=30)
    written, rate = int(out.split()[0]), float(out.split()[1])
    assert rate >= 900, f"the appender managed only {rate:.0f} lines/s"
    raw = log_path().read_bytes()
    kept = numbered(raw)
    with_value = {n for n in range(written) if n % 7 == 0}
    # Every line is there, except the ones holding the value that a forget had already seen.
    assert set(kept) | with_value == set(range(written)), (
        f"{len(set(range(written)) - set(kept) - with_value)} lost"
    )
    assert len(kept) == len(set(kept))
    # Lines holding the value that arrived after the last forget are still there; one more forget takes them.
    assert cli("-C", str(repo), "forget", VALUE, "--yes").returncode == 0
    raw = log_path().read_bytes()
    assert VALUE.encode() not in raw
    assert set(numbered(raw)) == set(range(written)) - with_value
    print(f"appender: {written} lines at {rate:.0f}/s during 3 forgets; lost 0")


@pytest.mark.slow
def test_sync_redaction_loses_no_line_under_1000_appends_per_second(repo: Path) -> None:
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    appender = start_appender(1000.0, 8.0, repo, f"&& export GITHUB_TOKEN={SECRET}")
    syncs = 0
    while appender.poll() is None:
        proc = cli("-C", str(repo), "sync", "--no-embed", "--source", "shell")
        assert proc.returncode == 0, proc.stderr
        syncs += 1
    out, _ = appender.communicate(timeout=30)
    written = int(out.split()[0])
    assert cli("-C", str(repo), "sync", "--no-embed", "--source", "shell").returncode == 0
    raw = log_path().read_bytes()
    assert sorted(numbered(raw)) == list(range(written)), "a line was lost or duplicated"
    assert SECRET.encode() not in raw
    refs = [r for r in shell_refs(repo) if "line-" in r]
    assert len(refs) == written and len(set(refs)) == written  # every line stored once, none twice
    assert syncs >= 1  # at least one sync ran wholly while the appender wrote
    print(f"appender: {written} lines at {float(out.split()[1]):.0f}/s during {syncs} syncs; lost 0")


@pytest.mark.slow
def test_forget_refuses_a_log_that_links_out_of_the_user_dir(repo: Path, tmp_path: Path) -> None:
    small_repo(repo)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(line(repo, f"ping {VALUE}", 1), encoding="utf-8")
    home_dir().mkdir(parents=True, exist_ok=True)
    log_path().symlink_to(outside)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    proc = cli("-C", str(repo), "forget", VALUE, "--yes")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "outside" in proc.stderr and "mv " in proc.stderr, proc.stderr
    assert VALUE in outside.read_text(encoding="utf-8")  # not written through
    # Still nothing forgotten: forget refused before changing anything.
    assert cli("-C", str(repo), "forget", "--list").stdout.strip() == "the deny-list is empty"
    # A link that stays inside the user dir is fine.
    log_path().unlink()
    inside = home_dir() / "rotated.jsonl"
    shutil.copy(outside, inside)
    log_path().symlink_to(inside)
    proc = cli("-C", str(repo), "forget", VALUE, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert VALUE not in inside.read_text(encoding="utf-8") and log_path().is_symlink()


@pytest.mark.slow
def test_forget_reaches_backups_scratch_files_and_a_killed_forgets_copy(repo: Path) -> None:
    small_repo(repo)
    append(line(repo, f"ssh deploy@{VALUE}", int(time.time() * 1000)))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    from nexusmem import project

    with project.load(repo).open_store() as store:
        backup = repo / ".nexusmem" / "memory.db.pre-scrub-20260101T000000.bak"
        store.backup_to(backup)
    assert VALUE.encode() in backup.read_bytes()
    live = subprocess.Popen(["sleep", "60"])
    try:
        scratch_live = home_dir() / f".bash-{live.pid}.tmp"
        scratch_live.write_bytes(f"  12  ssh deploy@{VALUE}\n\0".encode())
        dead = subprocess.run(["true"], check=True)
        del dead
        scratch_dead = home_dir() / ".bash-999999.tmp"
        scratch_dead.write_bytes(f"  3  echo {VALUE}\n\0".encode())
        # A long line the fish hook had put aside for one write() when its shell was killed.
        fish_dead = home_dir() / ".fish-999995.tmp"
        fish_dead.write_bytes(line(repo, f"echo {VALUE}", int(time.time() * 1000)).encode())
        leftover = home_dir() / ".shell-history.jsonl.999998.tmp"
        leftover.write_bytes(log_path().read_bytes())
        proc = cli("-C", str(repo), "forget", VALUE, "--yes")
        assert proc.returncode == 0, proc.stderr
        assert "1 scrub backup" in proc.stdout and "verified" in proc.stdout, proc.stdout
        assert VALUE.encode() not in backup.read_bytes()
        data = scratch_live.read_bytes()
        assert data and set(data) == {0}  # a live shell keeps its file, same size, zeroed
        assert not scratch_dead.exists() and not leftover.exists() and not fish_dead.exists()
        for path in home_dir().iterdir():
            if path.is_file():
                assert VALUE.encode() not in path.read_bytes(), path
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------------------------ forget: regexes, keys


@pytest.mark.slow
def test_a_pathological_regex_returns_promptly(repo: Path) -> None:
    commit(repo, "feat: " + "a" * 40 + "!", {"a.txt": "a" * 5000 + "!\n"})
    append(line(repo, "echo " + "a" * 100_000 + "!", int(time.time() * 1000)))
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    for args in (["forget", "--regex", "(a+)+$"], ["forget", "--regex", "(a+)+$", "--yes"]):
        started = time.monotonic()
        proc = cli("-C", str(repo), *args, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert time.monotonic() - started < 20
    started = time.monotonic()
    append(line(repo, "echo " + "a" * 100_000 + "!", int(time.time() * 1000)))
    assert (
        cli("-C", str(repo), "sync", "--no-embed", timeout=60).returncode == 0
    )  # the entry never hangs a sync
    assert time.monotonic() - started < 20
    proc = cli("-C", str(repo), "forget", "--regex", r"(a)\1")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "RE2" in proc.stderr, proc.stderr


def test_without_re2_only_patterns_that_cannot_backtrack_badly_are_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nexusmem.hygiene import denylist

    monkeypatch.setattr(denylist, "_re2", lambda: None)
    for bad in ("(a+)+$", "(a|aa)*b", "(x*)*y", r"(a)\1"):
        with pytest.raises(denylist.DenyListError, match=r"exponential|backreference"):
            denylist.make_regex(bad, False)
    entry = denylist.make_regex("corp-[0-9]{4}", True)
    assert entry.matches("see CORP-1234 now") and not entry.matches("corp-12")


@pytest.mark.slow
def test_remove_entry_by_key_or_value_and_a_broken_entry_says_how(repo: Path) -> None:
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert cli("-C", str(repo), "forget", VALUE, "--yes").returncode == 0
    listed = cli("-C", str(repo), "forget", "--list").stdout
    key = listed.split()[0]
    proc = cli("-C", str(repo), "forget", "--remove-entry", key)
    assert proc.returncode == 0 and f"removed {key}" in proc.stdout, proc.stderr
    assert "empty" in cli("-C", str(repo), "forget", "--list").stdout
    commit(repo, f"fix: {VALUE} again", {"b.txt": "b\n"})
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert VALUE.encode() in (repo / ".nexusmem" / "memory.db").read_bytes() + _wal(repo)
    # By value, the same entry made --global: gone from the user-wide list too.
    assert cli("-C", str(repo), "forget", VALUE, "--global", "--yes").returncode == 0
    assert json.loads((home_dir() / "deny-list.json").read_text())["entries"]
    assert cli("-C", str(repo), "forget", "--remove-entry", VALUE).returncode == 0
    assert json.loads((home_dir() / "deny-list.json").read_text())["entries"] == []
    # A stored entry this version cannot run (a backreference, from before RE2): sync names the way out.
    from nexusmem import project

    pattern = r"(b+)\1"
    with project.load(repo).open_store() as store:
        key = hashlib.sha256(f"0\0{pattern}".encode()).hexdigest()
        store.add_deny_entry(key, "regex", False, {"pattern": pattern}, "project")
    proc = cli("-C", str(repo), "sync", "--no-embed")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"--remove-entry {key[:12]}" in proc.stderr, proc.stderr
    assert "UNUSABLE" in cli("-C", str(repo), "forget", "--list").stdout
    assert cli("-C", str(repo), "forget", "--remove-entry", key[:12]).returncode == 0
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0


def _wal(repo: Path) -> bytes:
    wal = repo / ".nexusmem" / "memory.db-wal"
    return wal.read_bytes() if wal.exists() else b""


@pytest.mark.slow
def test_deny_list_hashes_are_keyed_and_older_entries_are_rekeyed(repo: Path, tmp_path: Path) -> None:
    from nexusmem.hygiene import denylist

    entry = denylist.make_literal("hunter22", False)
    key_file = home_dir() / "deny-key.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # The old attack: the salt is right there; guessing needs only salt + candidate. It no longer matches.
    salt = bytes.fromhex(entry.spec["salt"])
    assert hashlib.blake2b(b"hunter22", key=salt, digest_size=32).hexdigest() != entry.spec["digest"]
    assert entry.matches("password hunter22 here") and entry.is_value("hunter22")
    # Without the key file the entry cannot even be checked: the deny-list alone reveals nothing.
    saved = key_file.read_bytes()
    key_file.unlink()
    assert denylist.Entry(entry.key, "literal", False, entry.spec).problem
    key_file.write_bytes(saved)

    # An older, salt-only entry (as earlier versions wrote it) keeps matching, then gets re-keyed.
    small_repo(repo)
    old_salt = os.urandom(16)
    data = VALUE.encode()
    block = (len(data) + 1) // 2
    spec = {
        "salt": old_salt.hex(),
        "length": len(data),
        "digest": hashlib.blake2b(data, key=old_salt, digest_size=32).hexdigest(),
        "pieces": [
            hashlib.blake2b(data[j : j + block], key=old_salt, digest_size=8).hexdigest()
            for j in range(block)
        ],
    }
    from nexusmem import project

    run_cli("-C", str(repo), "init")
    with project.load(repo).open_store() as store:
        store.add_deny_entry(spec["digest"], "literal", False, spec, "project")
    assert "older salted hash" in cli("-C", str(repo), "forget", "--list").stdout
    proc = cli("-C", str(repo), "sync", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    assert VALUE.encode() not in (repo / ".nexusmem" / "memory.db").read_bytes() + _wal(repo)
    listed = cli("-C", str(repo), "forget", "--list").stdout
    assert "older salted hash" not in listed and listed.count("value") == 1, listed


@pytest.mark.slow
def test_global_entries_work_in_every_project_with_the_user_key(repo: Path, tmp_path: Path) -> None:
    small_repo(repo)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, f"feat: {VALUE} here too", {"c.txt": "c\n"})
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    assert cli("-C", str(repo), "forget", VALUE, "--global", "--yes").returncode == 0
    doc = json.loads((home_dir() / "deny-list.json").read_text())
    assert doc["entries"][0]["spec"]["scheme"] == "keyed-v1" and "keys" not in doc
    assert cli("-C", str(other), "sync", "--no-embed").returncode == 0
    assert VALUE.encode() not in (other / ".nexusmem" / "memory.db").read_bytes() + _wal(other)
    # An export carries the key, so another machine (another NEXUSMEM_HOME) can match the entries.
    export = tmp_path / "deny.json"
    assert cli("-C", str(repo), "forget", "--export", str(export)).returncode == 0
    assert json.loads(export.read_text())["keys"]


# ------------------------------------------------------------------------------ a second sync waits


def _lock_held(path: Path) -> bool:
    import fcntl

    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def big_history(repo: Path, commits: int) -> None:
    """COMMITS commits with a file each, written fast through git fast-import."""
    lines = []
    for i in range(commits):
        body = f"value {i}\n" * 40
        lines.append(
            f"commit refs/heads/main\ncommitter T <t@example.com> {1_700_000_000 + i} +0000\n"
            f"data {len(f'change {i}')}\nchange {i}\n"
            f"M 644 inline src/f{i % 50}.txt\ndata {len(body)}\n{body}\n"
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="".join(lines).encode(), check=True)
    git(repo, "reset", "-q", "--hard", "main")


@pytest.mark.slow
def test_a_second_sync_during_a_rebuild_waits_then_succeeds(repo: Path) -> None:
    big_history(repo, 1500)
    assert cli("-C", str(repo), "sync", "--no-embed", timeout=300).returncode == 0
    lock = repo / ".nexusmem" / "sync.run.lock"
    first = subprocess.Popen(
        [console_script(), "-C", str(repo), "sync", "--rebuild", "--no-embed", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not _lock_held(lock):
        assert first.poll() is None and time.monotonic() < deadline, "the rebuild never took the lock"
        time.sleep(0.01)
    second = cli("-C", str(repo), "sync", "--no-embed", timeout=300)
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 0, second.stderr
    assert "waiting for another sync of this project" in second.stderr, second.stderr
    assert "Traceback" not in second.stderr + err and "locked" not in second.stderr + err


@pytest.mark.slow
def test_a_second_sync_gives_up_cleanly_after_its_wait(repo: Path) -> None:
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from nexusmem.sync import exclusive\n"
            "with exclusive(Path(sys.argv[1]), 0, None):\n print('held', flush=True); time.sleep(60)",
            str(repo),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        proc = cli("-C", str(repo), "sync", "--no-embed", "--wait", "1")
        assert 0.9 < time.monotonic() - started < 15
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert "waiting for another sync" in proc.stderr and "another sync of" in proc.stderr, proc.stderr
        assert "is still running" in proc.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The holder died (SIGKILL): the OS released its lock, so the next sync just runs.
    assert cli("-C", str(repo), "sync", "--no-embed", "--wait", "0").returncode == 0


# ------------------------------------------------------------------------------ the bash scratch file


@pytest.fixture
def bash() -> Iterator[pexpect.spawn]:
    from nexusmem.resources import script_path

    env = dict(os.environ, TERM="dumb", PS1="PROMPT> ", HISTCONTROL="", LC_ALL="C.UTF-8")
    env["HISTFILE"] = str(Path(os.environ["HOME"]) / ".bash_history")
    child = pexpect.spawn(
        "bash",
        ["--norc", "--noprofile", "-i"],
        env=env,
        cwd=os.environ["HOME"],
        timeout=10,
        preexec_fn=lambda: os.umask(0o022),
    )
    child.sendline(f"source '{script_path('shell/nexusmem.bash')}'".encode())
    yield child
    child.close(force=True)


def wait_for(predicate: object, timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def commands() -> list[str]:
    if not log_path().exists():
        return []
    return [
        json.loads(t)["command"] for t in log_path().read_text(encoding="utf-8").splitlines() if t.strip()
    ]


def test_bash_scratch_file_is_private_emptied_by_sync_and_removed_at_exit(
    bash: pexpect.spawn, repo: Path
) -> None:
    small_repo(repo)
    bash.sendline(f"cd '{repo}'".encode())
    bash.sendline(f"echo one {SECRET}".encode())
    wait_for(lambda: any("one" in c for c in commands()))
    scratch = home_dir() / f".bash-{bash.pid}.tmp"
    assert stat.S_IMODE(scratch.stat().st_mode) == 0o600  # under umask 022
    assert SECRET.encode() in scratch.read_bytes()
    stale = home_dir() / ".bash-999997.tmp"
    stale.write_bytes(b"  1  old raw command\n\0")
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    data = scratch.read_bytes()
    assert data and set(data) == {0} and not stale.exists()
    assert SECRET.encode() not in log_path().read_bytes()
    # The hook copes with the emptied file: the next commands are recorded, in order, none lost.
    for word in ("two", "three"):
        bash.sendline(f"echo {word}".encode())
    wait_for(lambda: [c for c in commands() if c.startswith("echo t")] == ["echo two", "echo three"])
    bash.sendline(b"exit")
    bash.expect(pexpect.EOF)
    wait_for(lambda: not scratch.exists())
    assert not list(home_dir().glob(".bash-*"))


@pytest.mark.slow
def test_forget_waits_for_a_running_sync_instead_of_failing(repo: Path) -> None:
    small_repo(repo)
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from nexusmem.sync import exclusive\n"
            "with exclusive(Path(sys.argv[1]), 0, None):\n print('held', flush=True); time.sleep(8)",
            str(repo),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    proc = cli("-C", str(repo), "forget", VALUE, "--yes")
    holder.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "waiting for another sync of this project" in proc.stderr and "deleted" in proc.stdout


def _shell_summary(repo: Path) -> dict[str, object]:
    proc = cli("-C", str(repo), "sync", "--json", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    summary: dict[str, object] = next(s for s in json.loads(proc.stdout)["sources"] if s["name"] == "shell")
    return summary


def test_the_line_glued_to_a_torn_one_is_read_when_it_holds_a_secret(repo: Path) -> None:
    """A shell killed as it wrote leaves a line's start without its newline, and the next hook line is glued
    to it: that line is read, and the torn start counted as skipped. When the glued line held a secret, the
    redaction pass blanked the whole physical line first: `echo gluedB` never reached memory, and nothing
    was counted. A torn start holding a secret itself was lost the same way."""
    small_repo(repo)
    now = int(time.time() * 1000)
    torn = line(repo, "make torn " + "x" * 9000, now)[:8192]
    torn_secret = line(repo, f"deploy --token {SECRET} " + "y" * 9000, now + 2)[:8192]
    append(
        line(repo, "make before", now - 1),
        torn + line(repo, f"export GITHUB_TOKEN={SECRET} && echo gluedB", now + 1),
        torn_secret + line(repo, "echo gluedC", now + 3),
        "not json at all " + SECRET + "\n",
        line(repo, "make after", now + 4),
    )
    size = log_path().stat().st_size
    shell = _shell_summary(repo)
    data = log_path().read_bytes()
    assert SECRET.encode() not in data and len(data) == size
    assert {
        "make before",
        "export GITHUB_TOKEN=«redacted:github-token» && echo gluedB",
        "echo gluedC",
        "make after",
    } <= set(shell_refs(repo))
    # The two torn starts and the line that is no JSON: each counted, none of them silently gone.
    assert shell["skipped"] == 3, shell
    problems = shell["problems"]
    assert isinstance(problems, list) and sum("cut short" in p for p in problems) == 2, problems


def test_a_secret_as_the_name_of_a_key_does_not_outlive_the_sync(repo: Path) -> None:
    """Only a line's values were redacted: another writer's key named with a token stayed raw in the log. A
    key the contract does not know, which readers ignore, is dropped with its value when its name holds a
    secret; the line's own fields and the command stay."""
    small_repo(repo)
    now = int(time.time() * 1000)
    keyed = json.loads(line(repo, "make keyed", now, exit=2, duration_ms=15))
    keyed[SECRET] = "value"
    keyed["note"] = "kept"
    append(json.dumps(keyed) + "\n", line(repo, "make after-the-keyed-one", now + 1))
    size = log_path().stat().st_size
    assert cli("-C", str(repo), "sync", "--no-embed").returncode == 0
    data = log_path().read_bytes()
    assert SECRET.encode() not in data and len(data) == size
    first = json.loads(data.splitlines()[0])
    assert first == {k: v for k, v in keyed.items() if k != SECRET}
    assert {"make keyed", "make after-the-keyed-one"} <= set(shell_refs(repo))


def test_a_password_in_an_escaped_quote_or_under_an_unknown_key_does_not_outlive_the_sync(repo: Path) -> None:
    """Two ways a password stayed raw in the log after a sync. A torn start holding
    `echo "password=\\"…\\""`: the torn bytes were checked as JSON text, where that quote is `\\\\\\"`, and read
    as no secret. And another writer's key `"password": "…"`: only values holding a secret on their own
    were redacted, and `hunter2hunter2` alone is none, though a key so named says it is one."""
    small_repo(repo)
    now = int(time.time() * 1000)
    torn = line(repo, 'echo "password=\\"hunter2hunter2\\"" ' + "z" * 9000, now)[:8192]
    keyed = json.loads(line(repo, "make keyed", now + 2))
    keyed["password"] = "Tr0ub4dor-horse"
    keyed["api_key"] = "kx8f2q7zv9"
    keyed["note"] = "kept as is"
    append(
        torn + line(repo, "echo glued-after-the-torn-one", now + 1),
        json.dumps(keyed) + "\n",
        line(repo, "make after", now + 3),
    )
    size = log_path().stat().st_size
    shell = _shell_summary(repo)
    data = log_path().read_bytes()
    assert len(data) == size
    left = [s for s in ("hunter2hunter2", "Tr0ub4dor-horse", "kx8f2q7zv9") if s.encode() in data]
    assert not left, left
    assert b'"note":"kept as is"' in data and b'"password":"' in data
    assert {"echo glued-after-the-torn-one", "make keyed", "make after"} <= set(shell_refs(repo))
    assert shell["skipped"] == 1, shell
