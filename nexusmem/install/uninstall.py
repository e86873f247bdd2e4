"""`nexusmem uninstall`: take out every hook NexusMem installed, and say what it leaves behind.

What it removes, each exactly as `hook remove` / `hook git remove` / `hook agent remove` would (the files
byte-identical to before install): the prompt-hook block in every shell's rc file, the agents' command hooks
(user scope, and each repository's .claude/settings.local.json), and the pre-commit and post-commit blocks in this
repository (or, with all_projects, in every registered repository): in the folder git runs hooks from, in the
pre-commit framework's `<hook>.legacy` when `pre-commit install` moved ours there, and in the repository's own
hooks folder when core.hooksPath points elsewhere. What it only reports: entries for our
hooks in a `.pre-commit-config.yaml` (a committed file that the user's team shares: we print the lines to
take out rather than edit it), and the memories themselves (`.nexusmem/` in each repository, `~/.nexusmem`),
with the command that deletes them. Removing the package itself is the package manager's job.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from nexusmem import paths, registry
from nexusmem.errors import NexusMemError
from nexusmem.install import agent_hooks, git_hooks, shell_hooks

FRAMEWORK_CONFIG = ".pre-commit-config.yaml"
_FRAMEWORK_LINE = re.compile(r"^\s*(?:-\s*)?id:\s*['\"]?(nexusmem-[A-Za-z-]+)")


@dataclass
class Step:
    """One thing uninstall did (or, in a dry run, would do)."""

    what: str  # "shell hook" | "git hook" | "agent hook"
    path: Path
    detail: str


@dataclass
class Plan:
    removed: list[Step] = field(default_factory=list)
    framework: list[tuple[Path, int, str]] = field(default_factory=list)  # (config, line number, line)
    memories: list[Path] = field(default_factory=list)  # .nexusmem/ folders and ~/.nexusmem that exist
    errors: list[str] = field(default_factory=list)


def framework_entries(root: Path) -> list[tuple[Path, int, str]]:
    """(config file, 1-based line number, line) of every nexusmem hook id in ROOT's pre-commit config."""
    config = root / FRAMEWORK_CONFIG
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [
        (config, n, line) for n, line in enumerate(text.splitlines(), start=1) if _FRAMEWORK_LINE.match(line)
    ]


def _repositories(start: Path | None, all_projects: bool) -> list[Path]:
    roots: list[Path] = []
    if start is not None:
        # uninstall works outside a repository too: the shell hooks and the registry remain.
        with contextlib.suppress(NexusMemError):
            roots.append(paths.repo_root(start))
    if all_projects:
        for entry in registry.load():
            root = Path(str(entry.get("root")))
            if root.is_dir() and root not in roots:
                roots.append(root)
    return roots


def uninstall(start: Path | None, *, all_projects: bool = False, dry_run: bool = False) -> Plan:
    """Remove every shell hook and the git hooks of START's repository (every registered one with
    ALL_PROJECTS); with DRY_RUN change nothing and report what would go."""
    plan = Plan()
    for shell in shell_hooks.SHELLS:
        rc = shell_hooks.rc_file(shell)
        try:
            present = shell_hooks.is_installed(shell)
            if present and not dry_run:
                shell_hooks.remove(shell)
        except shell_hooks.ShellHookError as exc:
            plan.errors.append(str(exc))
            continue
        if present:
            plan.removed.append(Step("shell hook", rc, shell))
    roots = _repositories(start, all_projects)
    for agent, project in [(a, None) for a in agent_hooks.AGENTS] + [("claude-code", r) for r in roots]:
        try:
            present = agent_hooks.is_installed(agent, project)
            if present and not dry_run:
                agent_hooks.remove(agent, project)
        except NexusMemError as exc:
            plan.errors.append(str(exc))
            continue
        if present:
            plan.removed.append(Step("agent hook", agent_hooks.settings_path(agent, project), agent))
    # A settings file installed into from another environment (`$CLAUDE_CONFIG_DIR`, `$CODEX_HOME` set
    # then, not now) is not found by name: install recorded where it wrote.
    named = {step.path for step in plan.removed if step.what == "agent hook"}
    for path in agent_hooks.recorded_elsewhere(named):
        try:
            present = agent_hooks.has_ours_at(path)
            if present and not dry_run:
                agent_hooks.remove_at(path)
        except NexusMemError as exc:
            plan.errors.append(str(exc))
            continue
        if present:
            plan.removed.append(Step("agent hook", path, agent_hooks.agent_of(path)))
    for root in roots:
        try:
            # With core.hooksPath set, blocks an earlier install left in the repository's own hooks folder
            # too (git does not run them now, and would again once core.hooksPath is unset).
            folders = git_hooks.hook_dirs(root)
        except NexusMemError as exc:
            plan.errors.append(str(exc))
            folders = []
        for folder, name in [(f, n) for f in folders for n in git_hooks.HOOK_NAMES]:
            try:
                state = git_hooks.status(name, root, folder)
                if state.installed and not dry_run:
                    git_hooks.remove(name, root, folder)
            except NexusMemError as exc:
                plan.errors.append(str(exc))
                continue
            if state.installed:
                plan.removed.append(Step("git hook", state.path, name))
        try:
            for name in git_hooks.HOOK_NAMES if not dry_run else ():
                git_hooks.forget(name, root)
        except NexusMemError as exc:
            plan.errors.append(str(exc))
        plan.framework += framework_entries(root)
        if paths.state_dir(root).is_dir():
            plan.memories.append(paths.state_dir(root))
    # Every memory on this machine is left, whichever repositories lost their hooks: say where they are.
    for entry in registry.load():
        folder = paths.state_dir(Path(str(entry.get("root"))))
        if folder.is_dir() and folder not in plan.memories:
            plan.memories.append(folder)
    if paths.user_dir().is_dir():
        plan.memories.append(paths.user_dir())
    return plan
