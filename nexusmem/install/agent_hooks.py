"""Install, remove and inspect the coding agents' command hooks (Claude Code, Codex).

Each agent reads hooks from a JSON settings file of the same layout,
`{"hooks": {"<Event>": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "…"}]}]}}`:
- Claude Code: `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json`), events PostToolUse and
  PostToolUseFailure (a non-zero Bash exit fires only the latter). `--project` writes the repository's
  `.claude/settings.local.json`, which Claude Code keeps out of git; never `.claude/settings.json`, which is
  committed and would install the hook on every teammate's machine.
- Codex: `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json`), event PostToolUse (failures included), matcher
  `^Bash$` (a regular expression there). Codex's project `.codex/hooks.json` may be committed: no --project.

The hook command runs the recorder (nexusmem/agenthook.py) with this interpreter, by absolute paths.

Install is idempotent (an entry of ours with another command, from an older install, is replaced) and the
rest of the file is kept: keys, their order, indentation, line endings, a final newline. JSON has no
comments, so a file is parsed and written back; to make `remove` byte-for-byte, install keeps the file's
previous bytes (0600, in the user directory) with the hash of what it wrote, and remove puts them back while
the file is still exactly as install left it. After the user (or the agent) edited the file in between,
remove takes out only our entries. A file that is not valid JSON is never written: the error says where.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem import paths, private
from nexusmem.errors import NexusMemError, UsageError
from nexusmem.sources.shell.agentcmd import AGENTS as AGENTS

EVENTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("PostToolUse", "PostToolUseFailure"),
    "codex": ("PostToolUse",),
}
MATCHERS = {"claude-code": "Bash", "codex": "^Bash$"}
# Seconds the agent waits for the recorder at most (it takes ~0.1 s): a stuck disk must not stall a session.
TIMEOUT_S = 10
STATE_NAME = "agent-hooks.json"
_OURS = re.compile(r"nexusmem[\\/]agenthook\.py")


class AgentHookError(NexusMemError):
    """An agent hook could not be installed, removed or described."""


class AgentHookUsageError(AgentHookError, UsageError):
    """What was asked cannot be done as asked (Codex with --project): exit 2."""


@dataclass(frozen=True)
class AgentHookStatus:
    agent: str
    scope: str  # "user" | "project"
    path: Path
    installed: bool  # every event has our current command
    stale: bool  # an entry of ours with another command (an older install, a moved interpreter)


def normalise_agent(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    key = {"claude": "claude-code", "claudecode": "claude-code"}.get(key, key)
    if key not in AGENTS:
        raise AgentHookError(f"unsupported agent {name!r}: choose one of {', '.join(AGENTS)}")
    return key


def settings_path(agent: str, project: Path | None = None, environ: dict[str, str] | None = None) -> Path:
    """The file the hook goes into: user scope, or PROJECT's uncommitted Claude Code settings."""
    env = dict(os.environ) if environ is None else environ
    agent = normalise_agent(agent)
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude-code":
        if project is not None:
            return project / ".claude" / "settings.local.json"
        config = (
            Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        )
        return config / "settings.json"
    if project is not None:
        raise AgentHookUsageError(
            "Codex has no uncommitted project hooks file (.codex/hooks.json may be committed and would "
            "install the hook for every teammate): install it in your user scope, without --project"
        )
    return (Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex") / "hooks.json"


def recorder_path() -> Path:
    return Path(__file__).resolve().parent.parent / "agenthook.py"


def hook_command(agent: str) -> str:
    """`<python> -I -S <recorder> <agent>`: no site-packages, no PATH lookup, no console-script wrapper."""
    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(recorder_path()))} {normalise_agent(agent)}"


def _is_ours(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and bool(_OURS.search(entry["command"]))
    )


# --- reading and writing a JSON settings file as the user left it ----------------------------------------


@dataclass
class _Style:
    indent: int | str | None
    newline: str
    final_newline: bool
    ascii_only: bool
    bom: bool


def _style(text: str) -> _Style:
    newline = "\r\n" if "\r\n" in text else "\n"
    indent: int | str | None = 2
    stripped = text.lstrip("\ufeff").strip()
    if stripped and "\n" not in stripped:
        indent = None
    else:
        match = re.search(r"\n([ \t]+)\S", text)
        if match:
            lead = match.group(1)
            indent = "\t" if lead.startswith("\t") else len(lead)
    non_ascii = any(ord(ch) > 127 for ch in text.lstrip("\ufeff"))
    return _Style(
        indent=indent,
        newline=newline,
        final_newline=text.endswith("\n") or not text,
        ascii_only=("\\u" in text and not non_ascii),
        bom=text.startswith("\ufeff"),
    )


def _dump(data: Any, style: _Style) -> str:
    if style.indent is None:
        text = json.dumps(data, ensure_ascii=style.ascii_only)
    else:
        text = json.dumps(data, indent=style.indent, ensure_ascii=style.ascii_only)
    if style.final_newline:
        text += "\n"
    if style.newline != "\n":
        text = text.replace("\n", style.newline)
    return ("\ufeff" if style.bom else "") + text


def _read(path: Path) -> tuple[bytes | None, Any]:
    """(raw bytes, parsed object) of PATH; (None, None) when it does not exist. Bad JSON: AgentHookError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise AgentHookError(f"cannot read {path}: {exc}") from exc
    try:
        text = raw.decode("utf-8")
        data = json.loads(text.lstrip("\ufeff")) if text.strip() else {}
    except UnicodeDecodeError as exc:
        raise AgentHookError(f"{path}: not UTF-8 text (byte {exc.start}); nothing was changed") from exc
    except ValueError as exc:
        raise AgentHookError(
            f"{path}: not valid JSON ({exc}); fix or move the file, then run the command again."
            " Nothing was changed."
        ) from exc
    if not isinstance(data, dict):
        raise AgentHookError(f"{path}: expected a JSON object at the top, found {type(data).__name__}")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise AgentHookError(f"{path}: 'hooks' is a {type(hooks).__name__}, expected an object")
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise AgentHookError(f"{path}: 'hooks.{event}' is a {type(groups).__name__}, expected a list")
    return raw, data


def _write(path: Path, data: bytes, created: bool) -> None:
    from nexusmem.errors import StoreError

    try:
        path = paths.edit_target(path)  # a dotfile manager's link stays a link
        # As root for another user (`sudo -E`), their settings would become root's (os.replace): refused.
        private.refuse_root_in_anothers(path)
        if not path.parent.is_dir():
            private.make_dir(path.parent)
        tmp = path.with_name(f".{path.name}.nexusmem-tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if not created:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        raise AgentHookError(f"cannot write {path}: {exc}") from exc
    except StoreError as exc:
        raise AgentHookError(str(exc)) from exc


# --- what install left behind, to undo it byte for byte --------------------------------------------------


def _state_path() -> Path:
    return paths.user_dir() / STATE_NAME


def _load_state() -> dict[str, Any]:
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(state: dict[str, Any]) -> None:
    directory = paths.ensure_user_dir()
    target = directory / STATE_NAME
    if not state:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        return
    tmp = directory / f".{STATE_NAME}.tmp"
    fd = private.open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.replace(tmp, target)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the operations ----------------------------------------------------------------------------------------


def _our_entries(data: dict[str, Any], agent: str) -> dict[str, list[str]]:
    """Event -> the commands of our entries in DATA."""
    found: dict[str, list[str]] = {}
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for entry in group["hooks"]:
                    if _is_ours(entry):
                        found.setdefault(event, []).append(entry["command"])
    return found


def _strip_ours(data: dict[str, Any]) -> None:
    """Take every entry of ours out of DATA, and the groups, event lists and `hooks` they leave empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks[event]
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                entries = [e for e in group["hooks"] if not _is_ours(e)]
                if not entries and len(entries) != len(group["hooks"]):
                    continue
                group["hooks"] = entries
            kept.append(group)
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]


def install(
    agent: str, project: Path | None = None, environ: dict[str, str] | None = None
) -> tuple[Path, bool]:
    """Add the recorder to AGENT's settings. Returns (settings file, True if it changed anything)."""
    agent = normalise_agent(agent)
    path = settings_path(agent, project, environ)
    raw, data = _read(path)
    command = hook_command(agent)
    if raw is not None and all(_our_entries(data, agent).get(e) == [command] for e in EVENTS[agent]):
        return path, False
    text = "" if raw is None else raw.decode("utf-8")
    style = _style(text) if raw is not None else _Style(2, "\n", True, False, False)
    data = {} if data is None else data
    _strip_ours(data)
    hooks = data.setdefault("hooks", {})
    for event in EVENTS[agent]:
        hooks.setdefault(event, []).append(
            {
                "matcher": MATCHERS[agent],
                "hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_S}],
            }
        )
    new = _dump(data, style).encode("utf-8")
    state = _load_state()
    key = str(path)
    previous = state.get(key)
    # Keep the bytes from before our first install while the file is still what we last wrote.
    if not (isinstance(previous, dict) and raw is not None and previous.get("after") == _sha(raw)):
        previous = {"before": text if raw is not None else None, "made_dir": not path.parent.exists()}
    previous["after"] = _sha(new)
    previous["agent"] = agent
    state[key] = previous
    _write(path, new, created=raw is None)
    _save_state(state)
    return path, True


def remove(
    agent: str, project: Path | None = None, environ: dict[str, str] | None = None
) -> tuple[Path, bool]:
    """Take the recorder out of AGENT's settings. Returns (settings file, True if it changed anything)."""
    agent = normalise_agent(agent)
    path = settings_path(agent, project, environ)
    return path, remove_at(path)


def recorded_paths() -> list[Path]:
    """Every settings file an install wrote to, as it recorded them: the ones an environment that is not
    the installer's (no `$CLAUDE_CONFIG_DIR` now) would not find by name."""
    return [Path(key) for key in sorted(_load_state())]


def recorded_elsewhere(named: set[Path]) -> list[Path]:
    """The user-scope settings files install wrote to that are not among NAMED (where this environment
    names them): installed with `$CLAUDE_CONFIG_DIR` or `$CODEX_HOME` set then, not now. A project's
    settings.local.json is left out: it is found by its repository."""
    return [p for p in recorded_paths() if p not in named and p.name != "settings.local.json"]


def has_ours_at(path: Path) -> bool:
    """Whether the settings file PATH holds an entry of ours (current or stale)."""
    _raw, data = _read(path)
    return bool(_our_entries(data or {}, ""))


def agent_of(path: Path) -> str:
    """The agent whose settings file PATH is: as install recorded it, else by its name (Codex's file is
    hooks.json, Claude Code's settings*.json)."""
    record = _load_state().get(str(path))
    if isinstance(record, dict) and record.get("agent") in AGENTS:
        return str(record["agent"])
    return "codex" if path.name == "hooks.json" else "claude-code"


def remove_at(path: Path) -> bool:
    """Take the recorder out of the settings file PATH, byte for byte as it was when install's record still
    matches. Returns True if it changed anything."""
    raw, data = _read(path)
    state = _load_state()
    record = state.pop(str(path), None)
    if raw is None or not _our_entries(data, ""):
        _save_state(state)
        return False
    if isinstance(record, dict) and record.get("after") == _sha(raw):
        before = record.get("before")
        if before is None:
            try:
                path.unlink()
            except OSError as exc:
                raise AgentHookError(f"cannot remove {path}: {exc}") from exc
            if record.get("made_dir"):
                with contextlib.suppress(OSError):
                    path.parent.rmdir()  # only when empty: the agent may have put its own files there
        else:
            _write(path, str(before).encode("utf-8"), created=False)
    else:
        style = _style(raw.decode("utf-8"))
        _strip_ours(data)
        _write(path, _dump(data, style).encode("utf-8"), created=False)
    _save_state(state)
    return True


def status(agent: str, project: Path | None = None, environ: dict[str, str] | None = None) -> AgentHookStatus:
    agent = normalise_agent(agent)
    path = settings_path(agent, project, environ)
    _raw, data = _read(path)
    ours = _our_entries(data or {}, agent)
    command = hook_command(agent)
    installed = all(ours.get(e) == [command] for e in EVENTS[agent])
    stale = bool(ours) and not installed
    return AgentHookStatus(agent, "project" if project else "user", path, installed, stale)


def doubled(root: Path | None, environ: dict[str, str] | None = None) -> tuple[Path, Path] | None:
    """(user settings, project settings) when Claude Code's hook is in both its user settings and the
    repository ROOT's .claude/settings.local.json (current or stale): Claude Code runs both for every Bash
    call, so each call is logged twice (one call id: it makes one node, and counts once as unsynced). None
    otherwise, or when either file cannot be read (its own check says why)."""
    if root is None:
        return None
    user = settings_path("claude-code", None, environ)
    project = settings_path("claude-code", root, environ)
    try:
        both = has_ours_at(user) and has_ours_at(project)
    except AgentHookError:
        return None
    return (user, project) if both else None


def doubled_detail(user: Path, project: Path) -> str:
    """What a double install means, in the words install, status and doctor share."""
    return (
        f"claude-code: the command hook is installed twice, in {user} and {project}: Claude Code runs both,"
        " so every Bash call is logged twice (stored once); keep one"
    )


DOUBLED_FIX = "nexusmem hook agent remove claude-code --project"


def is_installed(agent: str, project: Path | None = None, environ: dict[str, str] | None = None) -> bool:
    """Whether any entry of ours is in the file (current or stale): what uninstall must take out."""
    path = settings_path(normalise_agent(agent), project, environ)
    _raw, data = _read(path)
    return bool(_our_entries(data or {}, agent))
