"""`nexusmem hook install/remove/status/print`: the library and the click group, on real rc files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pexpect
import pytest
from click.testing import CliRunner

from nexusmem.cli.hook import hook
from nexusmem.install import shell_hooks
from nexusmem.install.shell_hooks import BEGIN, END, ShellHookError


def home() -> Path:
    return Path(os.environ["HOME"])


@pytest.mark.parametrize(
    "before",
    [
        None,  # no rc file yet
        b"",  # an empty one
        b"alias ll='ls -l'\n",
        b"export A=1",  # no trailing newline
        b"line one\r\nline two\r\n",  # CRLF
        b"caf\xc3\xa9\n\n\n",
    ],
)
@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_install_then_remove_restores_the_file_exactly(shell: str, before: bytes | None) -> None:
    path = shell_hooks.rc_file(shell)
    if before is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(before)
    installed_at, changed = shell_hooks.install(shell)
    assert installed_at == path and changed
    text = path.read_bytes().decode("utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert str(shell_hooks.hook_script(shell)) in text
    assert text.startswith((before or b"").decode("utf-8"))

    assert shell_hooks.install(shell) == (path, False)  # idempotent
    assert path.read_bytes().decode("utf-8") == text

    assert shell_hooks.remove(shell) == (path, True)
    if before is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == before
    assert shell_hooks.remove(shell) == (path, False)


def test_an_rc_file_kept_as_a_link_by_a_dotfile_manager_stays_a_link() -> None:
    # stow, yadm and the like keep ~/.bashrc as a link into their repository: install and remove edit the
    # file it leads to. They used to replace the link with a copy, which the manager no longer saw.
    path = shell_hooks.rc_file("bash")
    kept = home() / "dotfiles" / "bashrc"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"alias ll='ls -l'\n")
    path.symlink_to(Path("dotfiles") / "bashrc")
    shell_hooks.install("bash")
    assert path.is_symlink() and BEGIN in kept.read_text(encoding="utf-8")
    shell_hooks.remove("bash")
    assert path.is_symlink() and kept.read_bytes() == b"alias ll='ls -l'\n"
    # A link to something that is not a file (/dev/null) is refused, and left as it was.
    path.unlink()
    path.symlink_to(os.devnull)
    with pytest.raises(ShellHookError, match="not a regular file"):
        shell_hooks.install("bash")
    assert path.is_symlink() and os.readlink(path) == os.devnull


@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_an_rc_file_it_creates_is_writable_by_nobody_else_whatever_the_umask(shell: str) -> None:
    # An rc file runs as the user at every shell start: 0666 under a umask of 000 (some containers and CI
    # images) would let any local user put commands in it, as would a 0777 ~/.config.
    path = shell_hooks.rc_file(shell)
    created = [p for p in [path, *path.parents] if not p.exists() and home() in p.parents]
    old = os.umask(0)
    try:
        shell_hooks.install(shell)
    finally:
        os.umask(old)
    for each in created:
        assert not each.stat().st_mode & 0o022, f"{each}: {oct(each.stat().st_mode & 0o777)}"
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("before", "appended", "after"),
    [
        ("first\n", "added later\n", "first\nadded later\n"),
        # An rc file without a final newline got one with the block; an installer that appended a line
        # after the block relies on it. Remove took it out as well and glued the two lines: `alias
        # ll="ls -l"export AFTER=1`, a broken alias and a lost export.
        ('alias ll="ls -l"', "export AFTER=1\n", 'alias ll="ls -l"\nexport AFTER=1\n'),
        # With nothing appended, remove gives back the file exactly as it was.
        ('alias ll="ls -l"', "", 'alias ll="ls -l"'),
    ],
)
def test_remove_keeps_lines_added_after_install(before: str, appended: str, after: str) -> None:
    path = shell_hooks.rc_file("bash")
    path.write_text(before, encoding="utf-8")
    shell_hooks.install("bash")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(appended)
    shell_hooks.remove("bash")
    assert path.read_text(encoding="utf-8") == after


def test_created_file_with_other_content_is_kept_on_remove() -> None:
    path = shell_hooks.rc_file("zsh")
    shell_hooks.install("zsh")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("setopt autocd\n")
    shell_hooks.remove("zsh")
    assert path.read_text(encoding="utf-8") == "setopt autocd\n"


def test_rc_file_locations_honour_zdotdir_and_xdg(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert shell_hooks.rc_file("bash", env) == tmp_path / ".bashrc"
    assert shell_hooks.rc_file("zsh", env) == tmp_path / ".zshrc"
    assert shell_hooks.rc_file("zsh", {**env, "ZDOTDIR": str(tmp_path / "z")}) == tmp_path / "z" / ".zshrc"
    assert shell_hooks.rc_file("fish", env) == tmp_path / ".config" / "fish" / "config.fish"
    xdg = {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert shell_hooks.rc_file("fish", xdg) == tmp_path / "xdg" / "fish" / "config.fish"
    if os.name != "nt":
        expected = tmp_path / ".config" / "powershell" / "Microsoft.PowerShell_profile.ps1"
        assert shell_hooks.rc_file("pwsh", env) == expected


def test_detect_shell() -> None:
    assert shell_hooks.detect_shell({"SHELL": "/usr/bin/zsh"}) == "zsh"
    assert shell_hooks.detect_shell({"SHELL": "/opt/homebrew/bin/fish"}) == "fish"
    assert shell_hooks.detect_shell({"SHELL": "/usr/local/bin/pwsh"}) == "pwsh"
    assert shell_hooks.detect_shell({"PSModulePath": "C:\\x"}) == "pwsh"
    with pytest.raises(ShellHookError, match="--shell"):
        shell_hooks.detect_shell({})
    with pytest.raises(ShellHookError, match="unsupported shell"):
        shell_hooks.detect_shell({"SHELL": "/bin/tcsh"})


def test_source_line_quotes_odd_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = tmp_path / "it's a dir" / "nexusmem.bash"
    monkeypatch.setattr(shell_hooks, "hook_script", lambda shell: odd)
    block = shell_hooks.render_block("bash")
    line = block.splitlines()[2]
    proc = subprocess.run(
        ["bash", "-c", f'set -- {line.split(" ] && . ")[1]}; printf %s "$1"'], capture_output=True
    )
    assert proc.stdout.decode() == str(odd)


# --- the CLI ----------------------------------------------------------------------------------


def test_cli_install_status_remove_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/bash")
    runner = CliRunner()
    bashrc = home() / ".bashrc"
    bashrc.write_text("# mine\n", encoding="utf-8")

    result = runner.invoke(hook, ["install"])
    assert result.exit_code == 0, result.output
    assert "Installed the bash hook" in result.output and str(bashrc) in result.output
    assert runner.invoke(hook, ["install", "--shell", "bash"]).output.startswith("The bash hook is already")

    result = runner.invoke(hook, ["status"])
    assert result.exit_code == 0
    assert "bash  installed" in result.output
    assert "zsh   not installed" in result.output
    assert "not written yet" in result.output

    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text('{"v":1}\n{"v":1}\n', encoding="utf-8")
    assert "2 line(s), 16 bytes, last written" in runner.invoke(hook, ["status"]).output

    result = runner.invoke(hook, ["remove"])
    assert result.exit_code == 0 and "Removed the bash hook" in result.output
    assert bashrc.read_text(encoding="utf-8") == "# mine\n"
    assert "nothing to do" in runner.invoke(hook, ["remove", "--shell", "bash"]).output


def test_cli_library_errors_become_click_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHELL", raising=False)
    monkeypatch.delenv("PSModulePath", raising=False)
    runner = CliRunner()
    result = runner.invoke(hook, ["install"])
    assert result.exit_code == 1
    assert "Error: cannot tell which shell" in result.output

    (home() / ".zshrc").write_text(f"{BEGIN}\nhalf a block\n", encoding="utf-8")
    result = runner.invoke(hook, ["remove", "--shell", "zsh"])
    assert result.exit_code == 1 and "no end marker" in result.output

    assert runner.invoke(hook, ["install", "--shell", "tcsh"]).exit_code == 2  # click's usage error


@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_cli_print_is_the_script(shell: str) -> None:
    result = CliRunner().invoke(hook, ["print", shell])
    assert result.exit_code == 0
    assert result.output == shell_hooks.hook_script(shell).read_text(encoding="utf-8")


def test_every_command_has_help_with_an_example() -> None:
    runner = CliRunner()
    for name in ("install", "remove", "status", "print"):
        result = runner.invoke(hook, [name, "--help"])
        assert result.exit_code == 0
        assert "Example" in result.output and "nexusmem hook" in result.output, name


# --- end to end: install into a real rc file, start a real interactive shell ----------------------

E2E = {
    "bash": ["bash", "-i"],
    "zsh": ["zsh", "-i"],
    "fish": ["fish", "-i"],
}


@pytest.mark.parametrize(
    "shell",
    [pytest.param(s, marks=pytest.mark.skipif(shutil.which(s) is None, reason=f"no {s}")) for s in E2E],
)
def test_installed_hook_records_in_a_fresh_login(shell: str) -> None:
    result = CliRunner().invoke(hook, ["install", "--shell", shell])
    assert result.exit_code == 0, result.output
    env = dict(os.environ, TERM="dumb", LANG="C.UTF-8", PS1="PROMPT> ")
    log = Path(env["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    child = pexpect.spawn(E2E[shell][0], E2E[shell][1:], env=env, cwd=str(home()), timeout=10)
    try:
        child.send(b"false installed\r")
        deadline = time.monotonic() + 8
        while not (log.exists() and log.read_bytes().strip()):
            assert time.monotonic() < deadline, child.before
            try:
                child.expect(pexpect.TIMEOUT, timeout=0.05)
            except pexpect.EOF:
                break
        entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        assert [(e["command"], e["exit"], e["shell"]) for e in entries] == [("false installed", 1, shell)]
    finally:
        child.close(force=True)


# --- PowerShell: static checks everywhere, a real run where pwsh exists ---------------------------


def test_powershell_script_static_checks() -> None:
    # Its syntax is checked by a real PowerShell grammar in tests/test_ps1_grammar.py.
    text = shell_hooks.hook_script("pwsh").read_text(encoding="utf-8")
    assert "Get-Variable -Name __nexusmem_loaded" in text  # include guard
    for needle in (
        "function global:prompt",
        "$function:prompt",  # wraps the existing prompt
        "function global:__nexusmem_record",
        "function global:__nexusmem_escape",
        "Get-History -Count 1",
        "StartExecutionTime",
        "EndExecutionTime",
        "$LASTEXITCODE",
        "[guid]::NewGuid()",
        "AppendAllText",
        "catch { }",
        "NEXUSMEM_HOME",
        "shell-history.jsonl",
    ):
        assert needle in text, needle
    for key in ("ts", "cwd", "exit", "duration_ms", "command", "shell", "session", "v"):
        assert f'"{key}":' in text, key


@pytest.mark.skipif(shutil.which("pwsh") is None, reason="pwsh is not installed")
def test_powershell_hook_records_commands(tmp_path: Path) -> None:
    script = shell_hooks.hook_script("pwsh")
    env = dict(os.environ, TERM="dumb")
    log = Path(env["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    child = pexpect.spawn("pwsh", ["-NoProfile", "-NoLogo"], env=env, cwd=str(tmp_path), timeout=30)
    try:
        child.send(f". '{script}'\r".encode())
        child.send(b"cmd /c exit 3; Write-Output 'a\"b'\r" if os.name == "nt" else b"sh -c 'exit 3'\r")
        child.send(b'Write-Output "tab`tquote`""\r')
        deadline = time.monotonic() + 25
        while not (log.exists() and len(log.read_bytes().splitlines()) >= 2):
            assert time.monotonic() < deadline, child.before
            try:
                child.expect(pexpect.TIMEOUT, timeout=0.1)
            except pexpect.EOF:
                break
        entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        assert entries[0]["exit"] == 3 and entries[0]["shell"] == "pwsh"
        assert entries[1]["command"] == 'Write-Output "tab`tquote`""'
        assert entries[1]["exit"] == 0
        assert entries[0]["session"] == entries[1]["session"]
    finally:
        child.close(force=True)


@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_install_points_a_block_an_older_install_left_at_this_ones_script(shell: str, tmp_path: Path) -> None:
    # After an upgrade into another environment, the rc block still sources the old install's script
    # (its old bugs included): install rewrites the block in place, keeping what surrounds it and its flags.
    path = shell_hooks.rc_file(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("alias ll='ls -l'\n", encoding="utf-8")
    shell_hooks.install(shell)
    current = path.read_text(encoding="utf-8")
    old_script = tmp_path / "old-venv" / "nexusmem" / "_data" / "shell" / "old-hook"
    old_script.parent.mkdir(parents=True)
    old_script.write_text("# the old install's hook\n")
    path.write_text(current.replace(str(shell_hooks.hook_script(shell)), str(old_script)) + "echo after\n")
    assert shell_hooks.is_installed(shell) and not shell_hooks.is_current(shell)
    from nexusmem import doctor

    found = [c for c in doctor.check_shells() if c.detail.startswith(f"{shell}:")]
    assert found and not found[0].ok and f"sources another NexusMem's hook ({old_script})" in found[0].detail
    assert found[0].fix == f"nexusmem hook install --shell {shell}"
    result = CliRunner().invoke(hook, ["install", "--shell", shell])
    assert "Updated the" in result.output
    assert path.read_text(encoding="utf-8") == current + "echo after\n"
    assert shell_hooks.is_current(shell)
    shell_hooks.remove(shell)
    assert path.read_text(encoding="utf-8") == "alias ll='ls -l'\necho after\n"


@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_hook_status_says_a_block_whose_script_is_gone_records_nothing(shell: str, tmp_path: Path) -> None:
    # The install the rc block was written by was deleted (a removed virtualenv): every prompt sources
    # nothing. `hook status` said "installed" while doctor said the script is gone; both say it now, with
    # the fix, and the fix works.
    path = shell_hooks.rc_file(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    shell_hooks.install(shell)
    gone = tmp_path / "removed-venv" / "nexusmem" / "_data" / "shell" / "hook"
    current = path.read_text(encoding="utf-8")
    path.write_text(current.replace(str(shell_hooks.hook_script(shell)), str(gone)), encoding="utf-8")
    runner = CliRunner()

    said = f"installed in {path}, but its script {gone} is gone: nothing is recorded"
    fix = f"(fix: nexusmem hook install --shell {shell})"
    result = runner.invoke(hook, ["status"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if said in line and fix in line], result.output
    from nexusmem import doctor

    found = [c for c in doctor.check_shells() if c.detail.startswith(f"{shell}:")]
    assert found and not found[0].ok and f"sources {gone}, which is gone" in found[0].detail
    assert found[0].fix == f"nexusmem hook install --shell {shell}"

    assert "Updated the" in runner.invoke(hook, ["install", "--shell", shell]).output
    result = runner.invoke(hook, ["status"])
    assert "is gone" not in result.output and f"{shell:<5} installed " in result.output, result.output
    assert [c.ok for c in doctor.check_shells() if c.detail.startswith(f"{shell}:")][:1] == [True]


@pytest.mark.parametrize("shell", shell_hooks.SHELLS)
def test_hook_status_says_a_block_that_sources_another_installs_hook_is_that_ones(
    shell: str, tmp_path: Path
) -> None:
    # The rc block sources another NexusMem install's hook script (an older release's, at another path):
    # `hook status` said "installed" while doctor said "sources another NexusMem's hook". Both say it now,
    # with the path and the fix, and the fix works.
    path = shell_hooks.rc_file(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    shell_hooks.install(shell)
    other = tmp_path / "old-venv" / "nexusmem" / "_data" / "shell" / "old-hook"
    other.parent.mkdir(parents=True)
    other.write_text("# the other install's hook\n")
    current = path.read_text(encoding="utf-8")
    path.write_text(current.replace(str(shell_hooks.hook_script(shell)), str(other)), encoding="utf-8")
    runner = CliRunner()

    result = runner.invoke(hook, ["status"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith(f"{shell:<5} "))
    assert line == (
        f"{shell:<5} installed in {path} from another NexusMem: it sources {other}, not this one's hook"
        f" (fix: nexusmem hook install --shell {shell})"
    ), result.output
    from nexusmem import doctor

    found = [c for c in doctor.check_shells() if c.detail.startswith(f"{shell}:")]
    assert found and not found[0].ok and f"sources another NexusMem's hook ({other})" in found[0].detail

    assert "Updated the" in runner.invoke(hook, ["install", "--shell", shell]).output
    result = runner.invoke(hook, ["status"])
    assert "another NexusMem" not in result.output, result.output
    assert f"{shell:<5} installed " in result.output, result.output
    assert [c.ok for c in doctor.check_shells() if c.detail.startswith(f"{shell}:")][:1] == [True]


def _login_bash_records(command: str) -> bool:
    """Whether a bash *login* shell (`bash -l`, what tmux and ssh start) records COMMAND in the log."""
    env = dict(os.environ, TERM="dumb", LANG="C.UTF-8", PS1="PROMPT> ")
    log = Path(env["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    child = pexpect.spawn("bash", ["-l", "-i"], env=env, cwd=str(home()), timeout=10)
    try:
        child.send(command.encode() + b"\r")
        child.send(b"echo done-$((6*7))\r")
        child.expect(b"done-42")
        child.expect(pexpect.TIMEOUT, timeout=0.3)
    finally:
        child.close(force=True)
    return log.exists() and command in log.read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_login_shell_that_would_not_load_the_hook_is_said(isolated_home: Path) -> None:
    """The hook goes into ~/.bashrc, which a bash login shell reads only through its login file: with none
    (or one that does not source ~/.bashrc) tmux, ssh and macOS Terminal recorded nothing, and neither
    install nor doctor said so. Both say it now, with the line that fixes it, and the line works."""
    result = CliRunner().invoke(hook, ["install", "--shell", "bash"])
    assert "bash login shells read" in result.output and "record nothing" in result.output, result.output
    assert not _login_bash_records("false from-a-login-shell")
    assert shell_hooks.login_gap() is not None
    # The fix the note gives, pasted into ~/.bash_profile.
    (home() / ".bash_profile").write_text("[ -f ~/.bashrc ] && . ~/.bashrc\n", encoding="utf-8")
    assert shell_hooks.login_gap() is None
    assert _login_bash_records("false after-the-fix")
    assert "login" not in CliRunner().invoke(hook, ["install", "--shell", "bash"]).output
    # Debian's ~/.profile form counts as loading it too.
    (home() / ".bash_profile").unlink()
    (home() / ".profile").write_text('if [ -f "$HOME/.bashrc" ]; then\n    . "$HOME/.bashrc"\nfi\n')
    assert shell_hooks.login_gap() is None
    # Words that only mention it do not, nor a line commented out; the fix names the file bash reads.
    (home() / ".bash_login").write_text('echo "remember to source ~/.bashrc"\n# . ~/.bashrc\n')
    assert shell_hooks.login_gap() is not None
    assert shell_hooks.login_fix().endswith(f"to {home() / '.bash_login'}")
