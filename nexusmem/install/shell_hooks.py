"""Install, remove and inspect the shell prompt hooks (a marked block in the shell's rc file).

The block sources the shipped script by absolute path. Install is idempotent; remove takes out
exactly what install added, so the rc file is byte-identical afterwards: the begin marker records
whether install had to add a newline to an unterminated last line, or created the file. A file
that install created is deleted by remove when nothing else was written to it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from nexusmem import paths
from nexusmem.errors import NexusMemError
from nexusmem.paths import shell_log_path
from nexusmem.resources import script_path
from nexusmem.sources.shell.logline import SHELLS as SHELLS  # the shells the hooks exist for

BEGIN = "# >>> nexusmem shell hook >>>"
END = "# <<< nexusmem shell hook <<<"
# Flags after the begin marker: what remove must undo besides the block itself.
FLAG_NEWLINE = "added-newline"
FLAG_CREATED = "created-file"

_SCRIPT_NAMES = {
    "bash": "nexusmem.bash",
    "zsh": "nexusmem.zsh",
    "fish": "nexusmem.fish",
    "pwsh": "nexusmem.ps1",
}
_SHELL_ALIASES = {"powershell": "pwsh", "pwsh-preview": "pwsh"}


class ShellHookError(NexusMemError):
    """A shell hook could not be installed, removed or described."""


@dataclass(frozen=True)
class HookStatus:
    shell: str
    rc_file: Path
    installed: bool
    script: Path | None = None  # what the block sources (None: no block, or its line could not be read)
    script_gone: bool = False  # a block whose script is not there (block_script): nothing is recorded
    # a block that sources another NexusMem install's script (from_another): it records with that one's hook
    another: bool = False


@dataclass(frozen=True)
class LogStatus:
    path: Path
    exists: bool
    size: int
    lines: int
    modified: datetime | None


def normalise_shell(name: str) -> str:
    """'bash', '/usr/bin/zsh', 'pwsh.exe', 'powershell' -> one of SHELLS; raise ShellHookError otherwise."""
    base = Path(name.strip()).name.lower()
    base = base.removesuffix(".exe")
    base = _SHELL_ALIASES.get(base, base)
    if base not in SHELLS:
        raise ShellHookError(f"unsupported shell {name!r}: choose one of {', '.join(SHELLS)}")
    return base


def detect_shell(environ: dict[str, str] | None = None) -> str:
    """The user's shell from $SHELL (PowerShell sets $PSModulePath, not $SHELL, on Windows)."""
    env = dict(os.environ) if environ is None else environ
    shell = env.get("SHELL", "")
    if shell:
        return normalise_shell(shell)
    if env.get("PSModulePath"):
        return "pwsh"
    raise ShellHookError("cannot tell which shell you use ($SHELL is not set): pass --shell")


def hook_script(shell: str) -> Path:
    """Absolute path of the shipped hook script for SHELL."""
    try:
        return script_path(f"shell/{_SCRIPT_NAMES[normalise_shell(shell)]}").resolve()
    except FileNotFoundError as exc:
        raise ShellHookError(str(exc)) from exc


def script_text(shell: str) -> str:
    """The hook script itself, for people who manage their dotfiles by hand."""
    return hook_script(shell).read_text(encoding="utf-8")


def rc_file(shell: str, environ: dict[str, str] | None = None) -> Path:
    """The rc file the hook goes into: ~/.bashrc, $ZDOTDIR/.zshrc, XDG config.fish, the pwsh $PROFILE."""
    env = dict(os.environ) if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    shell = normalise_shell(shell)
    if shell == "bash":
        return home / ".bashrc"
    if shell == "zsh":
        return Path(env.get("ZDOTDIR") or home) / ".zshrc"
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    if shell == "fish":
        return config / "fish" / "config.fish"
    if os.name == "nt":
        documents = Path(env.get("USERPROFILE") or home) / "Documents"
        return documents / "PowerShell" / "Microsoft.PowerShell_profile.ps1"
    return config / "powershell" / "Microsoft.PowerShell_profile.ps1"


_LOGIN_FILES = (".bash_profile", ".bash_login", ".profile")
# `. ~/.bashrc` or `source "$HOME/.bashrc"` where a command starts (a line's start, after `;`, `&&`, `||`,
# `{`, `then`, `do`): not the words inside an `echo "remember to source ~/.bashrc"`.
_LOADS_BASHRC = re.compile(
    r"(?m)(?:^|[;&|{]|\bthen\b|\bdo\b)[ \t]*(?:\.|source)[ \t]+[\"']?(?:~|\$HOME|\$\{HOME\})/\.bashrc\b"
)


def _login_file(environ: dict[str, str] | None) -> tuple[Path, Path | None]:
    """(the home folder, the login file bash reads: the first of _LOGIN_FILES that exists, or None)."""
    env = dict(os.environ) if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    return home, next((home / name for name in _LOGIN_FILES if (home / name).exists()), None)


def login_gap(environ: dict[str, str] | None = None) -> str | None:
    """Why a bash *login* shell (what tmux, ssh and macOS Terminal start) would not load the hook in
    ~/.bashrc, or None. bash reads only the first of ~/.bash_profile, ~/.bash_login, ~/.profile that exists
    at login, and ~/.bashrc only if that file sources it. Said, not fixed: writing a login file would change
    which one bash reads."""
    _home, path = _login_file(environ)
    if path is None:
        return "bash login shells read ~/.bash_profile, ~/.bash_login or ~/.profile, and there is none"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    without_comments = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    if _LOADS_BASHRC.search(without_comments):
        return None
    return f"bash login shells read {path}, which does not load ~/.bashrc"


def login_fix(environ: dict[str, str] | None = None) -> str:
    """The line that makes bash login shells load ~/.bashrc, and the file it goes into: the login file bash
    reads (creating ~/.bash_profile beside a ~/.bash_login or ~/.profile would stop bash reading that one)."""
    home, path = _login_file(environ)
    return f"add `[ -f ~/.bashrc ] && . ~/.bashrc` to {path or home / '.bash_profile'}"


def _source_line(shell: str, script: Path) -> str:
    path = str(script)
    if shell in ("bash", "zsh"):
        quoted = shlex.quote(path)
        return f"[ -f {quoted} ] && . {quoted}"
    if shell == "fish":
        quoted = "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return f"test -f {quoted}; and source {quoted}"
    quoted = "'" + path.replace("'", "''") + "'"
    return f"if (Test-Path -LiteralPath {quoted}) {{ . {quoted} }}"


def render_block(shell: str, flags: tuple[str, ...] = ()) -> str:
    """The lines install adds (each ending in a newline)."""
    shell = normalise_shell(shell)
    begin = " ".join((BEGIN, *flags))
    body = _source_line(shell, hook_script(shell))
    return (
        f"{begin}\n# Added by `nexusmem hook install`; `nexusmem hook remove` takes it out.\n{body}\n{END}\n"
    )


def _find_block(text: str, path: Path) -> tuple[int, int, tuple[str, ...]] | None:
    """(start, end, flags) of our block in TEXT as character offsets, or None."""
    start = 0
    while True:
        start = text.find(BEGIN, start)
        if start < 0:
            return None
        if start == 0 or text[start - 1] == "\n":
            break
        start += len(BEGIN)
    line_end = text.find("\n", start)
    if line_end < 0:
        raise ShellHookError(f"{path}: the nexusmem block has no end marker ({END!r}); remove it by hand")
    flags = tuple(text[start + len(BEGIN) : line_end].split())
    end = text.find("\n" + END, line_end)
    if end < 0:
        raise ShellHookError(f"{path}: the nexusmem block has no end marker ({END!r}); remove it by hand")
    end += 1 + len(END)
    if end < len(text) and text[end] == "\n":
        end += 1
    return start, end, flags


def _read(path: Path) -> str | None:
    try:
        # newline="" keeps \r\n files byte-identical through a round trip.
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ShellHookError(f"cannot read {path}: {exc}") from exc


def _write(path: Path, text: str) -> None:
    from nexusmem import private
    from nexusmem.errors import StoreError

    try:
        path = paths.edit_target(path)  # a dotfile manager's link stays a link
        # As root with another user's HOME, the rc file would become root's (os.replace): refused.
        private.refuse_root_in_anothers(path)
        _make_parents(path.parent)
        tmp = path.with_name(f".{path.name}.nexusmem-tmp")
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        # An rc file runs as the user at every shell start: one we create is never writable by others,
        # whatever the umask (000 in some containers and CI images would make it 0666).
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        raise ShellHookError(f"cannot write {path}: {exc}") from exc
    except StoreError as exc:
        raise ShellHookError(str(exc)) from exc


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _make_parents(folder: Path) -> None:
    """Create FOLDER and its missing parents (~/.config/fish) 0755 at most, whatever the umask."""
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir()
            os.chmod(each, 0o755 & ~_umask())


def install(shell: str, environ: dict[str, str] | None = None) -> tuple[Path, bool]:
    """Add the hook block to SHELL's rc file. Returns (rc file, True if it changed anything)."""
    shell = normalise_shell(shell)
    path = rc_file(shell, environ)
    text = _read(path)
    found = None if text is None else _find_block(text, path)
    if text is not None and found is not None:
        if _as_written(shell, text, found):
            return path, False
        # A block an older install wrote (another path to the script, an older wording): it still sources
        # that install's script, old bugs included. Written anew in place, with the flags it had.
        start, end, old_flags = found
        block = render_block(shell, old_flags)
        new = block if text[start:end].endswith("\n") else block.rstrip("\n")
        _write(path, text[:start] + new + text[end:])
        return path, True
    flags: list[str] = []
    if text is None:
        flags.append(FLAG_CREATED)
        text = ""
    separator = ""
    if text and not text.endswith("\n"):
        flags.append(FLAG_NEWLINE)
        separator = "\n"
    _write(path, text + separator + render_block(shell, tuple(flags)))
    return path, True


def is_current(shell: str, environ: dict[str, str] | None = None) -> bool:
    """Whether SHELL's rc file holds our block as this install writes it (False for none, or another's)."""
    shell = normalise_shell(shell)
    path = rc_file(shell, environ)
    text = _read(path)
    found = None if text is None else _find_block(text, path)
    return text is not None and found is not None and _as_written(shell, text, found)


def _as_written(shell: str, text: str, found: tuple[int, int, tuple[str, ...]]) -> bool:
    """Whether the block FOUND in TEXT (_find_block) is the one this install writes, with its flags."""
    start, end, flags = found
    return text[start:end].rstrip("\n") == render_block(shell, flags).rstrip("\n")


# `PROMPT_COMMAND=...` (or `export PROMPT_COMMAND=...`, `PROMPT_COMMAND=(...)`) that does not keep the value
# it replaces ($PROMPT_COMMAND / ${PROMPT_COMMAND...} in it): after the hook's block, it drops the hook.
_PROMPT_COMMAND_SET = re.compile(r"^\s*(?:export\s+|declare\s+(?:-\w+\s+)*)?PROMPT_COMMAND=(?P<value>.*)$")


def prompt_command_overwrites(environ: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(line number, line) of each assignment in the bash rc file that replaces PROMPT_COMMAND after the
    hook's block: the hook is dropped there, and bash records nothing from then on (the hook puts itself
    first again only from its own prompt function, which no longer runs). [] when there is none (or no
    block, or no file)."""
    try:
        lines = rc_file("bash", environ).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    after = False
    found: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if line.startswith(END):
            after = True
            continue
        m = _PROMPT_COMMAND_SET.match(line) if after else None
        if m is not None and "PROMPT_COMMAND" not in m.group("value"):
            found.append((number, line.strip()))
    return found


def is_installed(shell: str, environ: dict[str, str] | None = None) -> bool:
    """Whether SHELL's rc file holds our block (ShellHookError when it holds a broken one)."""
    path = rc_file(normalise_shell(shell), environ)
    text = _read(path)
    return text is not None and _find_block(text, path) is not None


def remove(shell: str, environ: dict[str, str] | None = None) -> tuple[Path, bool]:
    """Take the hook block out of SHELL's rc file. Returns (rc file, True if it changed anything)."""
    shell = normalise_shell(shell)
    path = rc_file(shell, environ)
    text = _read(path)
    found = None if text is None else _find_block(text, path)
    if text is None or found is None:
        return path, False
    start, end, flags = found
    # The newline install added after an unterminated last line goes again, unless something was appended
    # after the block since: the user's last line then needs it (`alias ll="ls -l"` + `export AFTER=1`).
    if FLAG_NEWLINE in flags and start > 0 and text[start - 1] == "\n" and end == len(text):
        start -= 1
    rest = text[:start] + text[end:]
    if FLAG_CREATED in flags and rest == "":
        try:
            path.unlink()
        except OSError as exc:
            raise ShellHookError(f"cannot remove {path}: {exc}") from exc
    else:
        _write(path, rest)
    return path, True


def sourced_script(shell: str, environ: dict[str, str] | None = None) -> Path | None:
    """The script path the installed rc block sources, or None."""
    path = rc_file(shell, environ)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    at = text.find(BEGIN)
    if at < 0:
        return None
    lines = text[at:].splitlines()
    if len(lines) < 3:
        return None
    line = lines[2]
    try:
        if shell == "pwsh":
            return Path(line.split("'")[1].replace("''", "'"))
        if shell == "fish":
            # `test -f 'P'; and source 'P'`: fish quotes escape \ and ' inside '...' (shlex would keep the ';').
            quoted = line.rsplit(" source ", 1)[1].strip()
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                return None
            return Path(re.sub(r"\\([\\'])", r"\1", quoted[1:-1]))
        return Path(shlex.split(line)[2])
    except (ValueError, IndexError):
        return None


def block_script(shell: str, environ: dict[str, str] | None = None) -> tuple[Path | None, bool]:
    """(the script SHELL's installed rc block sources, whether it is gone). Gone: the install that wrote the
    block was moved or uninstalled (or the line cannot be read), so every prompt sources nothing and nothing
    is recorded; `hook install` points the block at this install's script. Call it only for a shell whose
    block is installed (is_installed)."""
    script = sourced_script(shell, environ)
    return script, script is None or not script.is_file()


def from_another(shell: str, script: Path | None) -> bool:
    """Whether SCRIPT, what SHELL's installed rc block sources (block_script, there), is another NexusMem
    install's hook (an older release at another path), not this one's: `hook install` points it here."""
    return script is not None and script != hook_script(shell)


# Said beside an `--author me` answer that holds none of your commands while no shell has the prompt hook.
NO_PROMPT_HOOK_NOTE = "no prompt hook is installed, so the commands you type are not recorded: `nexusmem hook install` records them"


def none_installed(environ: dict[str, str] | None = None) -> bool:
    """Whether no supported shell's rc file holds our block (False when one cannot be read: say nothing)."""
    try:
        return not any(is_installed(shell, environ) for shell in SHELLS)
    except ShellHookError:
        return False


def own_commands_note(author: str | None) -> str | None:
    """NO_PROMPT_HOOK_NOTE for an answer filtered to AUTHOR `me` while no prompt hook is installed (the rc
    files are read only then), else None. The caller says it when the answer holds none of your commands."""
    return NO_PROMPT_HOOK_NOTE if author == "me" and none_installed() else None


def hook_status(environ: dict[str, str] | None = None) -> list[HookStatus]:
    """For every supported shell: its rc file, whether our block is in it, and whether its script is gone."""
    result = []
    for shell in SHELLS:
        path = rc_file(shell, environ)
        try:
            text = _read(path)
            installed = text is not None and _find_block(text, path) is not None
        except ShellHookError:
            installed = True  # a begin marker without an end is still "ours, present"
        script, gone = block_script(shell, environ) if installed else (None, False)
        another = installed and not gone and from_another(shell, script)
        result.append(HookStatus(shell, path, installed, script, gone, another))
    return result


def log_status(path: Path | None = None) -> LogStatus:
    """Size, line count and last change of the hooks' log."""
    path = path or shell_log_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return LogStatus(path=path, exists=False, size=0, lines=0, modified=None)
    except OSError as exc:
        raise ShellHookError(f"cannot read {path}: {exc}") from exc
    lines = 0
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                lines += chunk.count(b"\n")
    except OSError as exc:
        raise ShellHookError(f"cannot read {path}: {exc}") from exc
    modified = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
    return LogStatus(path=path, exists=True, size=stat.st_size, lines=lines, modified=modified)
