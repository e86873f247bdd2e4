"""Which repository a command belongs to (its cwd inside the root or a worktree) and which files it names."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from nexusmem import gitcmd
from nexusmem.errors import NexusMemError
from nexusmem.paths import tracked_name, with_bytes
from nexusmem.sources.shell.launchers import ASSIGNMENT, moved_folder

# Tokens checked against the file system per command, at most: a pasted 500-word command stays cheap.
MAX_PATH_TOKENS = 32

_MEMO_LIMIT = 50_000


# How the prompt hooks write a byte that is not UTF-8 (0x80-0xff): the text \xNN, as paths.tracked_name
# spells it in a file name (read back by paths.with_bytes). Hooks before wrote the \u00XX of its Latin-1
# reading (_LATIN1_BYTE).
_LATIN1_BYTE = re.compile("[\x80-\xff]")


def _kept(name: str) -> str:
    """NAME (a path as Python holds it) in the form memory keeps: a byte that is not UTF-8 as \\xNN
    (paths.tracked_name), never a surrogate escape, which SQLite cannot store."""
    return name if name.isascii() else tracked_name(os.fsencode(name))


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(path))


class Attributor:
    """Decides whether a cwd belongs to this repository (root or any worktree), caching per distinct cwd.

    Both the paths as written and their resolved forms are compared, so a log that says /tmp/x matches a
    root that resolves to /private/tmp/x (macOS) and the other way round.
    """

    def __init__(
        self, roots: list[Path], home: Path | None = None, former: Sequence[tuple[Path, int]] = ()
    ) -> None:
        forms: dict[str, Path] = {}
        self._resolved: list[Path] = []
        # The work tree whose memory the commands go to (label): the first root unless HOME is given (precheck
        # in a linked worktree reads that checkout's commands for its main work tree's memory).
        self._home = Path(os.path.realpath(home)) if home is not None else None
        self._written: list[str] = []
        for root in roots:
            if Path(os.path.realpath(root)) not in self._resolved:
                self._resolved.append(Path(os.path.realpath(root)))
            for form in (str(root), os.path.realpath(root)):
                forms.setdefault(_norm(form), Path(os.path.realpath(root)))
                if form not in self._written:
                    self._written.append(form)
        # A folder the repository was moved from (FORMER, gone now, with when this memory left it: epoch ms):
        # a command run there before the move ran in the first root (the folders under it are the same).
        self._left: dict[str, int] = {}
        for gone, left in former:
            if _norm(str(gone)) not in forms:
                forms[_norm(str(gone))] = self._resolved[0]
                self._left[_norm(str(gone))] = left
        # Longest first: a worktree nested inside the main checkout wins for cwds inside it.
        self._roots = sorted(forms.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._cache: dict[str, tuple[Path, str, int | None] | None] = {}

    @property
    def roots(self) -> list[Path]:
        """The resolved roots (the repository first, then its worktrees), each once."""
        return list(self._resolved)

    def path_forms(self) -> list[str]:
        """Every root as given and as resolved, each once: the texts a record naming one of them holds."""
        return list(self._written)

    @classmethod
    def for_repo(cls, root: Path, former: Sequence[tuple[Path, int]] = ()) -> Attributor:
        """The repository root plus every worktree `git worktree list` knows (one git process), and the
        folders it was moved from (FORMER: ScanContext.known["former_roots"])."""
        roots = [root]
        try:
            out = gitcmd.run(["worktree", "list", "--porcelain"], root)
        except NexusMemError:
            out = b""
        for line in out.split(b"\n"):
            if line.startswith(b"worktree "):
                roots.append(Path(os.fsdecode(line[len(b"worktree ") :])))
        return cls(roots, former=former)

    def label(self, root: Path, rel: str) -> str:
        """How a command run in REL of the work tree ROOT (a match) is kept: REL in the repository's own work
        tree (the first root); in another worktree, its path from the first root (`../repo-wt/src`), so that
        a command passing in one checkout never answers its failure in another."""
        home = self._home or (self._resolved[0] if self._resolved else root)
        if root == home:
            return _kept(rel)
        where = os.path.relpath(root if rel == "." else root / rel, home)
        return _kept(where.replace(os.sep, "/"))

    def match(self, cwd: str) -> tuple[Path, str] | None:
        """(resolved root, cwd relative to it in posix form, '.' for the root) or None when not ours."""
        found = self._find(cwd)
        return None if found is None else (found[0], found[1])

    def moved_away(self, cwd: str, when_ms: int) -> bool:
        """Whether CWD is in a folder the repository was moved from and WHEN_MS (a command's time) is not
        before this memory left it: what runs there since is another's (a repository made in its place)."""
        found = self._find(cwd)
        return found is not None and found[2] is not None and when_ms >= found[2]

    def _find(self, cwd: str) -> tuple[Path, str, int | None] | None:
        """match's answer, with when this memory left the folder it matched (None: a folder it is in)."""
        try:
            return self._cache[cwd]
        except KeyError:
            pass
        found = None
        if os.path.isabs(cwd) and "\x00" not in cwd:  # a NUL is in no path (and realpath raises on it)
            found = self._match_form(_norm(cwd), cwd)
            if found is None:
                found = self._match_form(_norm(os.path.realpath(cwd)), os.path.realpath(cwd))
            raw = with_bytes(cwd)  # a folder whose name is not UTF-8, as the prompt hooks write it
            if found is None and raw is not None:
                found = self._match_form(_norm(raw), raw)
            if found is None and _LATIN1_BYTE.search(cwd):
                # Hooks before wrote such a byte as the \u00XX of its Latin-1 reading: read back, the
                # folder's name is those bytes (as Python names such a path: a surrogate escape).
                raw = _LATIN1_BYTE.sub(lambda m: os.fsdecode(bytes([ord(m.group(0))])), cwd)
                found = self._match_form(_norm(raw), raw)
        if len(self._cache) > _MEMO_LIMIT:
            self._cache.clear()
        self._cache[cwd] = found
        return found

    def _match_form(self, normed: str, original: str) -> tuple[Path, str, int | None] | None:
        for form, resolved in self._roots:
            if normed == form:
                return resolved, ".", self._left.get(form)
            if normed.startswith(form.rstrip(os.sep) + os.sep):
                top = os.path.normpath(original)[: len(form.rstrip(os.sep))]
                rel = os.path.normpath(original)[len(form.rstrip(os.sep)) + 1 :]
                if _inside_another_repository(top, rel):
                    return None
                return resolved, rel.replace(os.sep, "/"), self._left.get(form)
        return None


def _inside_another_repository(top: str, rel: str) -> bool:
    """Whether a folder on the way from the work tree at TOP down to TOP/REL holds a `.git` of its own: a
    repository cloned inside this one, or a submodule, is another project (a home folder kept in git would
    otherwise take in every command of every project under it)."""
    here = top
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.lexists(os.path.join(here, ".git")):
            return True
    return False


_STRIP = "\"'`,;()[]{}"

_LINE_SUFFIX = re.compile(r"(?::\d+)+$")

# The message of a `git commit`, `tag`, `merge`, `stash` or `notes` (`-m MSG`, `-qam MSG`, `-mMSG`,
# `--message=MSG`) and the file it is read from (`-F FILE`, `--file FILE`): no file the command commits.
# "fix: stray declaration in cJSON.c" named cJSON.c, and a `git commit -am` that failed (nothing to commit)
# was linked to the next commit touching it as its fix. Its pathspecs (`git commit src/a.py`) still count.
_GIT_MESSAGE = re.compile(
    r"""((?<![\w.-])git\s+(?:-\S+(?:\s+[^-\s;&|]\S*)?\s+)*(?:commit|tag|merge|stash|notes)(?![\w-])"""
    r"""(?:\s+(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s;&|"'][^\s;&|]*))*?\s+)"""
    r"""(?:-[a-zA-Z]*[mF]|--message|--file)(?:=|\s+)?(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s;&|]+)"""
)


def command_files(
    command: str, cwd: Path, root: Path, *, known: dict[tuple[str, str], str | None] | None = None
) -> tuple[str, ...]:
    """Repository paths (posix, relative to ROOT) that COMMAND names and that exist, in order of mention.

    `pytest tests/test_x.py::test_y`, `ruff check src/a.py:12`, `--cov=src/pkg`, a setting's file
    (`FILE=check.py`) all count; the words a
    subshell's leading `cd DIR &&`, `env -C DIR` or `sudo -D DIR` runs in that folder are read from it
    (`( cd sub && python3 ./check.py )` names sub/check.py: launchers.moved_folder). Only tokens
    with a '/' or '.' cost a file-system check, so plain words are free. KNOWN, when given, keeps each
    (cwd, path) answer for the caller's next commands (one read of the hook log: the disk does not change).
    """
    found: list[str] = []
    checked = 0
    root_prefix = str(root).rstrip(os.sep) + os.sep
    if "git" in command:
        while True:
            # One message at a time: `git commit -m subject -m "body"` has two.
            command, n = _GIT_MESSAGE.subn(r"\1", command, count=1)
            if not n:
                break
    words = command.split()
    moved = moved_folder(words) if ("(" in command or "-" in command) else None
    there = cwd if moved is None else Path(os.path.normpath(os.path.join(cwd, moved[0])))
    for at, token in enumerate(words):
        if "/" not in token and "." not in token:
            continue
        base = there if moved is not None and at < moved[1] else cwd
        tok = token.strip(_STRIP).lstrip("<>&|0123456789" if token[:1] in "<>0123456789" else "")
        if tok.startswith("-"):
            if "=" not in tok:
                continue
            tok = tok.split("=", 1)[1].strip(_STRIP)
        elif "=" in tok and ASSIGNMENT.match(tok):
            # `make lint FILE=check.py`: a setting's value that is a file's name names it by its path here.
            tok = tok.split("=", 1)[1].strip(_STRIP)
            if "." not in tok.rsplit("/", 1)[-1].strip("."):
                continue  # `PYTHONPATH=./src`: a folder to search, not a file the command names
        tok = tok.split("::", 1)[0]
        tok = _LINE_SUFFIX.sub("", tok)
        if not tok or tok in (".", "..") or "://" in tok or "*" in tok or "?" in tok or tok.startswith("~"):
            continue
        checked += 1
        if checked > MAX_PATH_TOKENS:
            break
        key = (str(base), tok)
        if known is not None and key in known:
            rel_path = known[key]
        else:
            rel_path = _in_root(tok, base, root, root_prefix)
            if known is not None:
                known[key] = rel_path
        if rel_path is not None and rel_path not in found:
            found.append(rel_path)
    return tuple(found)


def _in_root(tok: str, cwd: Path, root: Path, root_prefix: str) -> str | None:
    """TOK's path relative to ROOT (posix, in the form memory keeps: _kept) when it exists from CWD (else
    from ROOT) inside ROOT, else None. A \\xNN in TOK is also read as the byte a hook wrote so (paths.with_bytes):
    `sh caf\\xe9.sh` ran the Latin-1 caf\\xe9.sh, not café.sh; so in CWD (a folder whose name is not UTF-8)."""
    raw, here = with_bytes(tok), with_bytes(str(cwd))
    for name in (tok,) if raw is None else (tok, raw):
        for base in (cwd, root) if here is None else (cwd, here, root):
            candidate = os.path.join(base, name)
            if os.path.lexists(candidate):
                real = os.path.realpath(candidate)
                if real.startswith(root_prefix):
                    return _kept(real[len(root_prefix) :].replace(os.sep, "/"))
                return None
    return None
