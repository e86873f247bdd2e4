"""Install, remove and inspect NexusMem's git hooks (pre-commit: precheck; post-commit, post-merge and
post-applypatch: detached auto-sync, so history that arrives by a commit, a merge or pull, or `git am` is
synced).

What gets written is a marked block: a subshell holding the shipped hook body (hooks/pre-commit or
hooks/post-commit, comments dropped) after one line pinning the console script's absolute path, resolved at
install time. The body is copied, not referenced: a hook that ran a file inside one virtualenv broke every
commit (`/bin/sh: cannot open ...`) once that virtualenv was upgraded or uninstalled. The copy runs the pinned
script while it exists, else the `nexusmem` on PATH, else prints one line saying what to do and lets the commit
through. Where the block goes:

- no hook yet: a new file holding a shebang and the block (remove deletes the file);
- an existing POSIX-shell hook: the block goes right after its shebang line (remove takes out exactly those
  bytes). First rather than last, because a foreign hook that ends in `exit` would otherwise never reach us,
  and running first leaves the foreign hook's own exit status as the hook's status;
- anything else (a Python or Node hook, a symlink): refused unless --force, which moves the foreign hook
  aside to `<name>.nexusmem-legacy` and writes a hook that runs ours and then `exec`s it (remove moves it
  back, byte for byte).

The hooks directory comes from `git rev-parse --git-path hooks`, so core.hooksPath and worktrees (which
share the main repository's hooks) are honoured.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from nexusmem import gitcmd, paths
from nexusmem.errors import NexusMemError
from nexusmem.resources import script_path

# The hooks that start the auto-sync (hooks/post-commit's body): git runs post-commit for a commit (a
# rebase's picks, a cherry-pick, an amend), post-merge for a merge or a pull (a fast-forward one too), and
# post-applypatch for each patch `git am` applies; none of them runs the others.
SYNC_HOOKS: tuple[str, ...] = ("post-commit", "post-merge", "post-applypatch")
HOOK_NAMES: tuple[str, ...] = ("pre-commit", *SYNC_HOOKS)
# The id in the begin marker tells our block from anyone else's text that merely mentions nexusmem.
HOOK_ID = "nexusmem-hook-v1"
LEGACY_SUFFIX = ".nexusmem-legacy"

FLAG_CREATED = "created-file"
FLAG_NEWLINE = "added-newline"
FLAG_LEGACY = "legacy"
FLAG_STRICT = "strict"
# The post-commit block sits in a hooks folder every repository shares (core.hooksPath set outside the
# repository's own config): it then syncs only repositories that already have a memory.
FLAG_SHARED = "shared"

# Interpreters whose syntax our three POSIX lines are valid in.
_SH_LIKE = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})


class GitHookError(NexusMemError):
    """A hook could not be installed or removed; the message says why and what to do."""


@dataclass
class HookState:
    """What `status` reports for one hook."""

    name: str
    path: Path
    exists: bool
    installed: bool
    how: str | None  # "created" | "chained" | "legacy" (ours wraps a moved-aside foreign hook) | None
    strict: bool
    executable: bool
    command: str | None  # the console script the block pins
    command_exists: bool
    # Why the hook does not do its job (its target is gone), or None when it works. A hook that falls back
    # to the nexusmem on PATH works; `fallback` names that one.
    broken: str | None = None
    fallback: str | None = None


def _begin(name: str) -> bytes:
    return f"# >>> nexusmem {name} hook >>> {HOOK_ID}".encode()


def _end(name: str) -> bytes:
    return f"# <<< nexusmem {name} hook <<<".encode()


def hooks_dir(start: Path | str | None = None) -> Path:
    """The directory git runs hooks from for the repository at START (core.hooksPath, worktrees honoured)."""
    root = paths.repo_root(start)
    out = os.fsdecode(gitcmd.run(["rev-parse", "--git-path", "hooks"], root).rstrip(b"\n"))
    # Relative answers (including a relative core.hooksPath) are relative to the top of the work tree.
    return Path(os.path.normpath(root / out))


def shared_folder(start: Path | str | None = None) -> str | None:
    """Where core.hooksPath comes from when it makes the hooks folder every repository's (set in the user's
    or the system's git config, or git's environment), e.g. "global: /home/me/.gitconfig"; None when the
    folder is this repository's own (no core.hooksPath, or one set in its .git/config)."""
    root = paths.repo_root(start)
    code, out = gitcmd.run_ok(["config", "--show-scope", "--show-origin", "--get", "core.hooksPath"], root)
    if code != 0:  # not set (1), or a git older than 2.26 that has no --show-scope
        return None
    scope, _sep, rest = os.fsdecode(out).partition("\t")
    if scope in ("local", "worktree"):
        return None
    origin = rest.partition("\t")[0]
    origin = origin.removeprefix("file:")
    return f"{scope}: {origin}" if origin and origin != "command line:" else scope


def console_script() -> Path:
    """Absolute path of the installed `nexusmem` script, resolved now so hooks never search PATH."""
    bindir = Path(os.path.abspath(sys.executable)).parent  # not resolve(): a venv's python is a symlink
    for name in ("nexusmem", "nexusmem.exe"):
        candidate = bindir / name
        if candidate.is_file():
            return candidate
    found = shutil.which("nexusmem")
    if found:
        return Path(os.path.abspath(found))
    raise GitHookError(
        f"cannot find the nexusmem console script next to {sys.executable} or on PATH; reinstall NexusMem"
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _body(name: str) -> list[str]:
    """The shipped hook body's lines without its shebang, comments and blank lines (every sync hook runs
    hooks/post-commit's)."""
    shipped = "pre-commit" if name == "pre-commit" else "post-commit"
    text = script_path(f"hooks/{shipped}").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


PIN = "nexusmem_pinned="


def render_block(name: str, flags: tuple[str, ...], legacy: Path | None = None) -> bytes:
    """The marked lines install writes for hook NAME (each ending in a newline)."""
    verb = "git" if name == "pre-commit" else "git-post"
    lines = [
        " ".join((_begin(name).decode(), *flags)),
        f"# Added by `nexusmem hook {verb} install`; `nexusmem hook {verb} remove` takes it out.",
        "(",
        f"{PIN}{_quote(str(console_script()))}",
    ]
    if FLAG_STRICT in flags:
        lines.append("set -- --strict")
    if FLAG_SHARED in flags:
        lines.append("nexusmem_shared=1")
    lines += _body(name)
    # Only a strict precheck's refusal may stop the hook; the body exits 0 otherwise.
    lines.append(") || exit $?" if name == "pre-commit" else ")")
    if legacy is not None:
        lines.append(f'exec {_quote(str(legacy))} "$@"')
    lines.append(_end(name).decode())
    return ("\n".join(lines) + "\n").encode()


def find_block(data: bytes, name: str, path: Path) -> tuple[int, int, tuple[str, ...]] | None:
    """(start, end, flags) of our block in DATA as byte offsets, or None when there is none."""
    begin, end_marker = _begin(name), _end(name)
    start = 0
    while True:
        start = data.find(begin, start)
        if start < 0:
            return None
        if start == 0 or data[start - 1 : start] == b"\n":
            break
        start += len(begin)
    line_end = data.find(b"\n", start)
    end = data.find(b"\n" + end_marker, line_end) if line_end >= 0 else -1
    if end < 0:
        raise GitHookError(f"{path}: the nexusmem block has no end marker; remove it by hand")
    flags = tuple(data[start + len(begin) : line_end].decode("utf-8", "replace").split())
    end += 1 + len(end_marker)
    if data[end : end + 1] == b"\n":
        end += 1
    return start, end, flags


def _is_sh_like(data: bytes) -> bool:
    if not data.startswith(b"#!"):
        return True  # git runs a hook without a shebang with /bin/sh
    words = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return True
    program = os.path.basename(words[0])
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        program = os.path.basename(rest[0]) if rest else ""
    return program in _SH_LIKE


def _write_bytes(path: Path, data: bytes, mode: int | None) -> None:
    tmp = path.with_name(f".{path.name}.nexusmem-tmp")
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, mode if mode is not None else 0o755)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise GitHookError(f"cannot write {path}: {exc}") from exc


def _check_name(name: str) -> None:
    if name not in HOOK_NAMES:
        raise GitHookError(f"unknown hook {name!r} (known: {', '.join(HOOK_NAMES)})")


@dataclass
class InstallResult:
    path: Path
    changed: bool
    how: str  # "created" | "chained" | "legacy" | "unchanged" | "updated" | "repaired"
    warning: str | None = None
    was_broken: str | None = None  # what a repaired hook did wrong before
    # a sync hook: where the core.hooksPath that every repository shares is set (shared_folder)
    shared: str | None = None


def install(
    name: str, start: Path | str | None = None, *, strict: bool = False, force: bool = False
) -> InstallResult:
    """Install our block into hook NAME. Idempotent; a different --strict choice updates the block in place."""
    _check_name(name)
    directory = hooks_dir(start)
    if not force:
        _refuse_a_folder_the_repository_chose(directory, start)
    flags = [FLAG_STRICT] if strict and name == "pre-commit" else []
    # Only the auto-sync acts differently in a folder every repository shares (precheck skips a repository
    # without a memory wherever it is installed).
    shared = shared_folder(start) if name in SYNC_HOOKS else None
    if shared is not None:
        flags.append(FLAG_SHARED)
    result = _install(name, directory, flags, force)
    result.shared = shared
    if result.changed and _tracked(result.path, start):
        shared_hook = (
            f"{result.path} is a file this repository commits (core.hooksPath points into the work tree):"
            f" the block names this machine's nexusmem ({console_script()}), so leave the change out of your"
            " commits; the pre-commit framework's nexusmem hooks run each user's own nexusmem instead"
        )
        result.warning = f"{result.warning}; {shared_hook}" if result.warning else shared_hook
    return result


def _tracked(path: Path, start: Path | str | None) -> bool:
    """Whether git tracks PATH in the repository at START (a hooks folder the team commits: husky's)."""
    root = paths.repo_root(start)
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    code, _out = gitcmd.run_ok(["ls-files", "--error-unmatch", "--", relative.as_posix()], root)
    return code == 0


def _refuse_a_folder_the_repository_chose(directory: Path, start: Path | str | None) -> None:
    """A core.hooksPath in the repository's own .git/config that leads out of the repository to a folder
    that does not exist: a repository unpacked from an archive brings that config, and installing would
    create folders wherever it says (~/.ssh/…). A folder that exists (hooks a user keeps outside their
    repositories) and the user's or the system's setting (shared_folder) are theirs."""
    if directory.is_dir():
        return
    root = paths.repo_root(start)
    inside = [p.resolve() for p in (root, paths.git_common_dir(root)) if p is not None]
    where = directory.resolve()
    if any(where == base or base in where.parents for base in inside):
        return
    if shared_folder(start) is not None:
        return
    raise GitHookError(
        f"this repository's own git config (core.hooksPath) sends its hooks to {directory}, a folder outside"
        " the repository that does not exist: check `git config --local core.hooksPath`; if it is yours,"
        " create the folder (or use --force)"
    )


def _install(name: str, directory: Path, flags: list[str], force: bool) -> InstallResult:
    path = directory / name
    if path.is_symlink():
        # Rewriting through a symlink would edit a shared script; replacing it would lose the link.
        if not force:
            raise GitHookError(f"{path} is a symlink to another tool's hook; use --force to wrap it")
        return _install_legacy(name, path, flags)
    try:
        data: bytes | None = path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as exc:
        raise GitHookError(f"cannot read {path}: {exc}") from exc
    if data is None:
        directory.mkdir(parents=True, exist_ok=True)
        block = render_block(name, (FLAG_CREATED, *flags))
        _write_bytes(path, b"#!/bin/sh\n" + block, 0o755)
        return InstallResult(path, True, "created")
    found = find_block(data, name, path)
    if found is not None:
        return _refresh(name, path, data, found, flags)
    if not _is_sh_like(data):
        if not force:
            raise GitHookError(
                f"{path} is not a shell script, so nexusmem cannot add its line to it; "
                f"use --force to move it to {path.name}{LEGACY_SUFFIX} and run it from our hook"
            )
        return _install_legacy(name, path, flags)
    mode = path.stat().st_mode & 0o7777
    extra: list[str] = []
    if data.startswith(b"#!"):
        cut = data.find(b"\n")
        if cut < 0:
            extra.append(FLAG_NEWLINE)
            head, tail = data + b"\n", b""
        else:
            head, tail = data[: cut + 1], data[cut + 1 :]
    else:
        head, tail = b"", data
    block = render_block(name, (*extra, *flags))
    _write_bytes(path, head + block + tail, mode)
    warning = None
    if not os.access(path, os.X_OK):
        warning = f"{path} is not executable, so git does not run it (chmod +x it to enable both hooks)"
    return InstallResult(path, True, "chained", warning)


def _refresh(
    name: str, path: Path, data: bytes, found: tuple[int, int, tuple[str, ...]], flags: list[str]
) -> InstallResult:
    start, end, old_flags = found
    kept = tuple(f for f in old_flags if f not in (FLAG_STRICT, FLAG_SHARED))
    legacy = path.with_name(path.name + LEGACY_SUFFIX) if FLAG_LEGACY in kept else None
    block = render_block(name, (*kept, *flags), legacy)
    if data[start:end] == block:
        return InstallResult(path, False, "unchanged")
    command, _ok, broken, fallback = _diagnose(data[start:end].decode("utf-8", "replace"))
    _write_bytes(path, data[:start] + block + data[end:], path.stat().st_mode & 0o7777)
    if broken or fallback:
        return InstallResult(path, True, "repaired", was_broken=broken or f"{command} was gone")
    return InstallResult(path, True, "updated")


def _install_legacy(name: str, path: Path, flags: list[str]) -> InstallResult:
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    if legacy.exists() or legacy.is_symlink():
        raise GitHookError(f"{legacy} already exists; move it away before installing with --force")
    os.rename(path, legacy)
    block = render_block(name, (FLAG_CREATED, FLAG_LEGACY, *flags), legacy)
    try:
        _write_bytes(path, b"#!/bin/sh\n" + block, 0o755)
    except GitHookError:
        os.rename(legacy, path)
        raise
    return InstallResult(path, True, "legacy")


def remove(name: str, start: Path | str | None = None) -> tuple[Path, bool]:
    """Take our block out of hook NAME, restoring the file exactly as it was. Returns (path, changed)."""
    _check_name(name)
    path = hooks_dir(start) / name
    if path.is_symlink():
        return path, False  # ours is never a symlink
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return path, False
    found = find_block(data, name, path)
    if found is None:
        return path, False
    start_at, end, flags = found
    if FLAG_NEWLINE in flags and data[start_at - 1 : start_at] == b"\n":
        start_at -= 1
    rest = data[:start_at] + data[end:]
    try:
        if FLAG_CREATED in flags and rest in (b"", b"#!/bin/sh\n"):
            path.unlink()
            if FLAG_LEGACY in flags:
                os.rename(path.with_name(path.name + LEGACY_SUFFIX), path)
        else:
            _write_bytes(path, rest, path.stat().st_mode & 0o7777)
    except OSError as exc:
        raise GitHookError(f"cannot restore {path}: {exc}") from exc
    return path, True


def _unquote(text: str, at: int) -> str:
    """The single-quoted shell word starting at TEXT[AT] (as _quote writes it)."""
    out: list[str] = []
    i = at + 1
    while i < len(text):
        end = text.find("'", i)
        if end < 0:
            return "".join(out) + text[i:]
        out.append(text[i:end])
        if text.startswith("'\\''", end):
            out.append("'")
            i = end + 4
            continue
        return "".join(out)
    return "".join(out)


def _diagnose(block: str) -> tuple[str | None, bool, str | None, str | None]:
    """(pinned command, it exists, why the block is broken, the PATH fallback it runs instead)."""
    at = block.find(PIN)
    if at >= 0:  # the current, self-contained block
        command = _unquote(block, at + len(PIN))
        if os.access(command, os.X_OK):
            return command, True, None, None
        fallback = shutil.which("nexusmem")
        if fallback:
            return command, False, None, fallback
        return command, False, f"{command} is gone and no nexusmem is on PATH: the hook skips itself", None
    # An older block ran a body file inside the install (NEXUSMEM_BIN=... /bin/sh 'body'); when that file
    # is gone /bin/sh cannot open it and every commit fails.
    marker = "NEXUSMEM_BIN='"
    at = block.find(marker)
    old: str | None = _unquote(block, at + len(marker) - 1) if at >= 0 else None
    body_at = block.find("/bin/sh '")
    body = _unquote(block, body_at + len("/bin/sh ")) if body_at >= 0 else None
    if body is not None and not Path(body).is_file():
        return old, False, f"it runs {body}, which is gone: every commit fails", None
    if old is not None and not os.access(old, os.X_OK):
        return old, False, f"{old} is gone: the hook does nothing", None
    return old, True, None, None


def status(name: str, start: Path | str | None = None) -> HookState:
    """Where hook NAME lives, whether (and how) our block is in it, and whether what it runs still exists."""
    _check_name(name)
    path = hooks_dir(start) / name
    exists = path.exists()
    data = path.read_bytes() if exists and not path.is_symlink() else b""
    try:
        found = find_block(data, name, path) if data else None
    except GitHookError:
        found = None
    command: str | None = None
    command_exists = False
    broken: str | None = None
    fallback: str | None = None
    if found is not None:
        text = data[found[0] : found[1]].decode("utf-8", "replace")
        command, command_exists, broken, fallback = _diagnose(text)
    flags = found[2] if found else ()
    how = None
    if found is not None:
        how = "legacy" if FLAG_LEGACY in flags else ("created" if FLAG_CREATED in flags else "chained")
    return HookState(
        name=name,
        path=path,
        exists=exists,
        installed=found is not None,
        how=how,
        strict=FLAG_STRICT in flags,
        executable=exists and os.access(path, os.X_OK),
        command=command,
        command_exists=command_exists,
        broken=broken,
        fallback=fallback,
    )


def pinned_only_warning() -> str | None:
    """Why the hook will break when this install goes, when `nexusmem` on PATH is not this install.

    `uvx` and similar run NexusMem from a cache path that is cleaned up later; a hook can then only fall
    back to a `nexusmem` on PATH, and there is none (or another one).
    """
    script = console_script()
    found = shutil.which("nexusmem")
    if found and os.path.realpath(found) == os.path.realpath(script):
        return None
    where = f"the nexusmem on PATH is {found}" if found else "no nexusmem is on PATH"
    return (
        f"the hook runs {script}, and {where}: if that path goes away (a uvx cache, a deleted virtualenv) the"
        " hook skips itself with a message. Install NexusMem with `pipx install` or `uv tool install` so the"
        " hook can find it on PATH."
    )
