"""Priors: how much a node is worth (0..1) before any query, from what kind of event it is.

The numbers are the original product's. Measure before changing them.
"""

from __future__ import annotations

import re

from nexusmem.resolved import failed

COMMIT_TYPE_SIGNAL: dict[str, float] = {
    "fix": 0.8,
    "feat": 0.8,
    "security": 0.85,
    "revert": 0.78,
    "perf": 0.7,
    "refactor": 0.68,
    "test": 0.45,
    "docs": 0.35,
    "build": 0.32,
    "ci": 0.28,
    "chore": 0.25,
    "style": 0.2,
}
OTHER_COMMIT = 0.5
_CONVENTIONAL = re.compile(r"^(?P<type>[a-zA-Z]+)(?:\([^)]*\))?(?P<bang>!)?:\s")
_BOTISH = re.compile(r"(\[bot\]|dependabot|renovate|\bbump\b|^merge\b|^Merge )", re.IGNORECASE)

# A commit touching more files/lines than this is "huge": its message speaks for too much at once.
HUGE_FILES = 100
HUGE_LINES = 5000


def conventional_type(subject: str) -> str | None:
    """'fix' for 'fix(parser)!: ...', None when the subject is not a conventional commit."""
    m = _CONVENTIONAL.match(subject)
    return m.group("type").lower() if m else None


def commit_signal(
    subject: str,
    body: str,
    *,
    is_merge: bool = False,
    author: str = "",
    files_changed: int = 0,
    lines_changed: int = 0,
) -> float:
    kind = conventional_type(subject)
    value = COMMIT_TYPE_SIGNAL.get(kind or "", OTHER_COMMIT)
    m = _CONVENTIONAL.match(subject)
    if m and m.group("bang"):
        value += 0.12
    if len(body.strip()) > 120:
        value += 0.1
    if _BOTISH.search(subject) or "[bot]" in author.lower():
        value -= 0.15
    if is_merge:
        value = min(value, 0.3)
    if files_changed > HUGE_FILES or lines_changed > HUGE_LINES:
        value *= 0.75
    return _clamp(value)


_NOISE = {
    "cd",
    "ls",
    "ll",
    "la",
    "pwd",
    "clear",
    "exit",
    "history",
    "cls",
    "z",
    "j",
    "echo",
    "which",
    "type",
    "whoami",
    "date",
    "true",
    "false",
    "l",
    "dir",
    "fg",
    "bg",
    "jobs",
    "reset",
    "logout",
    "exec",
}
_DESTRUCTIVE = re.compile(
    r"(\brm\s+-[a-zA-Z]*[rf]|\bgit\s+(push\s+(-f|--force)|reset\s+--hard|clean\s+-[a-z]*f|branch\s+-D|"
    r"rebase|checkout\s+--\s|restore\b|stash\s+(drop|clear))|\bdd\s|\bmkfs|\bchmod\s+-R|\bchown\s+-R|"
    r"\bdrop\s+(table|database)\b|\btruncate\b|\bkubectl\s+delete|\bterraform\s+(apply|destroy)|"
    r"\bdocker\s+(rm|rmi|system\s+prune)|\bsudo\b)",
    re.IGNORECASE,
)
_INSTALL = re.compile(
    r"\b(pip3?|pipx|uv|poetry|npm|pnpm|yarn|bun|cargo|go|gem|brew|apt|apt-get|dnf|yum|pacman|conda|composer)"
    r"\s+(install|add|i|get|sync|update|upgrade)\b|\buv\s+pip\s+install\b",
    re.IGNORECASE,
)
_BUILD_TEST = re.compile(
    r"\b(make|cmake|ninja|pytest|tox|nox|jest|vitest|mocha|cargo\s+(build|test|check|clippy|run)|"
    r"go\s+(build|test|vet|run)|npm\s+(run|test|start)|pnpm\s+(run|test|build)|yarn\s+(run|test|build)|"
    r"mvn|gradle|\./gradlew|dotnet\s+(build|test)|tsc|mypy|ruff|eslint|flake8|black|pylint|"
    r"python3?\s+-m\s+(pytest|unittest|build|mypy)|docker\s+(build|compose)|bazel|just|rake|mix\s+test)\b",
    re.IGNORECASE,
)


def command_class(command: str) -> str:
    """noise | destructive | install | build | other."""
    text = command.strip()
    first = text.split(None, 1)[0] if text else ""
    if _DESTRUCTIVE.search(text):
        return "destructive"
    if first in _NOISE:
        return "noise"
    if _INSTALL.search(text):
        return "install"
    if _BUILD_TEST.search(text):
        return "build"
    return "other"


_CLASS_SIGNAL = {"noise": 0.1, "destructive": 0.75, "install": 0.6, "build": 0.55, "other": 0.35}


def shell_signal(command: str, exit_code: int | None) -> float:
    """A failure is worth more than a success; noise is worth little. Unknown exit (scraped): no bonus."""
    value = _CLASS_SIGNAL[command_class(command)]
    if exit_code is not None:
        value += 0.25 if failed(exit_code) else 0.05
    return _clamp(value)


_EXPLAINS = re.compile(r"\b(because|the reason|trade-?off|instead of|rationale|why)\b", re.IGNORECASE)


def doc_signal(text: str) -> float:
    """Docs .45, +.25 when the text explains itself."""
    return _clamp(0.45 + (0.25 if _EXPLAINS.search(text) else 0.0))


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, round(value, 4)))


def conversation_signal(answer: str, *, ran_commands: bool, failed: bool, sidechain: bool) -> float:
    """A conversation turn .45 (recorded talk about events, below the events themselves); +.1 when the
    agent ran commands in it, +.1 more when one failed (the exchanges that discuss a failure), +.1 when the
    answer explains itself; a subagent's sidechain −.15 (work on behalf of the main thread, not a decision)."""
    value = 0.45
    if ran_commands:
        value += 0.1
    if failed:
        value += 0.1
    if _EXPLAINS.search(answer):
        value += 0.1
    if sidechain:
        value -= 0.15
    return _clamp(value)
