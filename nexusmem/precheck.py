"""Precheck: warnings about the files about to be committed, from what this repository's memory holds.

Per file: shell commands that failed in the last 30 days, name the file (a path, a parent directory, or its
module name in the command, outside URLs, absolute paths elsewhere and what remote or container tools were
asked about: _naming_text; not a file the line only writes to through `>`/`>>` or hands to git: _running_text; a module name another tracked file bears only for the one the failing test file imports by its dotted path: SharedNames) and were never seen passing (a later passing run of the command resolves a
failure, so does its whole test file's for a pytest node id, and for a file so does one of a narrower form of it naming the same test file:
_without_narrower_passes; a commit linked as its fix does not); the same for the files that import it (the import
edges the last sync stored: `git add src/cache.py` warns that `pytest tests/test_api.py` failed when
tests/test_api.py imports src/cache.py); and high churn (many commits touching it lately).

Runs on every commit, so it stays light: no click needed here, no project id (that would start git), the
store opened read-only, and three indexed range reads for all files together. HEAD is read from .git's files;
git is asked which commits a reset or a rebase left behind only when HEAD is not where the last sync saw it
(_left_behind).

Commands not synced yet count too: the hook log past this project's shell cursor (its last 4 MB at most) is
read with the shell source's own parser (sources/shell/tail: the log reader without the collector), so the
test that failed a minute ago warns before any `nexusmem sync`. That module is imported only when the log
has such a tail. The tail is first read as typed, without redacting it (loading the engine and ~0.1 ms per
distinct command): when no failure from the tail is open and no failure to report carries a redacted value
(the only cases where redacting could change the answer), that answer stands. Otherwise the answer is taken
again from that same read (not parsed again) with every failing command redacted, and the passing ones that
could be their retry once redacted (_texts_to_redact): the answer redacting every command gives, for 50
redactions instead of 200 on the benchmark's tail. Every failure shown is redacted exactly as a sync would
store it; nothing unredacted is ever shown.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nexusmem import authors, gitcmd, paths, resolved, secreturl, synced_head, timefmt
from nexusmem.errors import GitCommandError, NexusMemError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

    from nexusmem.sources.shell.tail import TailCommand
    from nexusmem.store.hookreads import HookReader

DAY_MS = 86_400_000
WINDOW_DAYS = 30
CHURN_THRESHOLD = 4
# Timestamps a little ahead of the wall clock (another machine's skewed clock) still count as "recent".
FUTURE_SLACK_MS = DAY_MS
# At most this many distinct failing commands are reported per file: a wall of warnings gets ignored.
MAX_FAILURES_PER_FILE = 5
# How a redacted value looks in a stored command (nexusmem.redact.placeholder), without importing redact.
PLACEHOLDER = "«redacted:"

# Module names too generic to mean "this file" when they appear in a command (`npm test`, `make setup`).
_GENERIC_STEMS = frozenset(
    {"test", "tests", "main", "index", "init", "setup", "utils", "util", "conftest", "readme", "changelog",
     "license", "makefile", "package", "lib", "src", "app", "mod", "common", "types", "config", "core"}
)  # fmt: skip

# A word that is a file's name (`deploy.sh`, `cache_test.go`): its stem, when its extension is one of a
# file a command runs or reads; `cache.main()` (code) and `pkg.build` (a module path) are not.
_FILE_WORD = re.compile(
    r"^([\w-]+)\.(?:sh|bash|zsh|fish|ps1|py|pyw|js|mjs|cjs|jsx|ts|tsx|mts|cts|rb|go|rs|java|kt|kts|scala|php|pl|"
    r"lua|c|h|cc|cpp|cxx|hpp|cs|swift|m|r|jl|ex|exs|erl|clj|dart|vue|svelte|sql|json|ya?ml|toml)$"
)

# Tools whose second word is a subcommand (`npm run build`, `cargo check`, `go vet`): that word names no
# module (a staged run.py is not what `npm run build` ran).
_SUBCOMMAND_TOOLS = frozenset(
    {"npm", "npx", "yarn", "pnpm", "bun", "deno", "cargo", "go", "docker", "podman", "kubectl", "helm", "poetry",
     "uv", "pipenv", "pip", "pip3", "make", "gradle", "./gradlew", "mvn", "dotnet", "git", "terraform", "composer",
     "bundle", "rake", "mix", "swift", "flutter", "dart", "nx", "turbo", "lerna"}
)  # fmt: skip


# Files whose name is not a module name: a command mentioning `worker` is not about docs/worker.md.
_NOT_CODE = frozenset(
    {".md", ".rst", ".txt", ".adoc", ".rdoc", ".json", ".yaml", ".yml", ".toml", ".lock", ".cfg", ".ini", ".csv",
     ".html", ".css", ".svg", ".png", ".jpg", ".gif", ".ico", ".pdf", ".xml"}
)  # fmt: skip


class Finding:
    """One warning about one file. (A plain class: `dataclasses` imports `inspect`, ~10% of a cold
    precheck.)"""

    FIELDS = (  # the JSON order
        "path", "kind", "message", "command", "exit", "ts", "times", "commits", "importer",
    )  # fmt: skip
    # folder: where a failed command ran, as its message names it ("" for the top): not in the JSON, where
    # the command is the finding's; an importer's finding names it as the importer's own finding does.
    __slots__ = (*FIELDS, "folder")

    def __init__(
        self,
        path: str,
        kind: str,  # "failure" | "churn" | "importer_failure"
        message: str,
        command: str | None = None,
        exit: int | None = None,
        ts: int | None = None,
        times: int = 1,
        commits: int | None = None,
        importer: str | None = None,  # kind "importer_failure": the file importing PATH whose command failed
        folder: str = "",
    ) -> None:
        self.path = path
        self.kind = kind
        self.message = message
        self.command = command
        self.exit = exit
        self.ts = ts
        self.times = times
        self.commits = commits
        self.importer = importer
        self.folder = folder

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"Finding({self.path!r}, {self.kind!r}, {self.message!r})"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: getattr(self, name) for name in self.FIELDS}
        data["date"] = timefmt.day(self.ts) if self.ts is not None else None
        return data


class PrecheckResult:
    """What precheck looked at and found. `checked` is False when there was no memory to check against."""

    def __init__(
        self,
        root: str | None,
        files: list[str],
        findings: list[Finding] | None = None,
        checked: bool = True,
        reason: str | None = None,
        nothing_given: bool = False,
    ) -> None:
        self.root = root
        self.files = files
        self.findings: list[Finding] = findings if findings is not None else []
        self.checked = checked
        self.reason = reason
        # `--files` with no file after it (a CI diff that found none: a shallow checkout without a merge
        # base): nothing checked, which `--strict` refuses rather than pass a job that checked nothing.
        self.nothing_given = nothing_given
        # What the findings were counted from, when it is not the whole story (a reset since the last sync).
        self.notes: list[str] = []
        # What is wrong in the memory's setup whatever was checked (a password in the config's team.url):
        # warnings on stderr, as every local command says them, never in the JSON.
        self.warnings: list[str] = []
        # The files given (`--files`) that are neither in the work tree nor in the index, each said on stderr
        # (not_found): not checked, and not in `files`.
        self.not_found: list[str] = []

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "checked": self.checked,
            "reason": self.reason,
            "files": self.files,
            "findings": [f.to_json() for f in self.findings],
            "notes": self.notes,
        }


def staged_files(root: Path, *, working: bool = False) -> list[str]:
    """Repository-relative paths staged for commit (or, with WORKING, changed but not staged); a file the
    commit deletes is left out (its failing test cannot be run before committing, nor need be)."""
    args = ["diff", "--name-only", "-z", "--no-ext-diff", "--diff-filter=d"]
    if not working:
        args.insert(1, "--cached")
    else:  # the work tree: the repository's own content filters are not run (gitcmd.worktree_options)
        args[:0] = gitcmd.worktree_options(root)
    keep: tuple[str, ...] = ()
    index = os.environ.get("GIT_INDEX_FILE")
    if index:
        # `git commit -a` and `git commit PATH` run hooks against a temporary index: that one holds what is
        # being committed. Git runs hooks from the top of the work tree, so a relative value means ROOT.
        os.environ["GIT_INDEX_FILE"] = os.path.join(os.getcwd(), index)
        keep = ("GIT_INDEX_FILE",)
    try:
        out = gitcmd.run(args, root, keep_env=keep)
    except GitCommandError as exc:
        # Git that refuses the repository for its owner answers `git diff` with its usage text (it sees
        # no repository): say why instead, in one line.
        _code, _out, err = gitcmd.run_full(["rev-parse", "--git-dir"], root)
        if paths.refuses_owner(err):
            raise paths.refused(root) from exc
        raise GitCommandError(str(exc).split("\n", 1)[0]) from exc
    # Decoded as the git source stores paths: a name that is not UTF-8 then matches its stored form, and
    # never reaches SQLite as a lone surrogate (which it cannot encode: the whole check was lost).
    return [paths.tracked_name(p) for p in out.split(b"\0") if p]


def relative_files(root: Path, files: Sequence[str], cwd: Path | None = None) -> list[str]:
    """FILES as given on the command line (relative to CWD) → posix paths relative to ROOT."""
    base = cwd or Path.cwd()
    real_root = os.path.realpath(root)
    out: list[str] = []
    for name in files:
        path = _in_repository(real_root, base, name)
        # argv holds a name that is not UTF-8 as lone surrogates: give it the form the store keeps.
        out.append(paths.tracked_name(os.fsencode(name if path is None else path)))
    return out


def _in_repository(real_root: str, base: Path, name: str) -> str | None:
    """NAME (relative to BASE) as a posix path relative to the repository's top (REAL_ROOT, its real path),
    None when it lies outside."""
    rel = os.path.relpath(os.path.realpath(os.path.join(base, name)), real_root)
    return None if rel.startswith("..") else Path(rel).as_posix()


def not_found(
    root: Path, files: Sequence[str], names: Sequence[str], cwd: Path, *, skipped: bool = False
) -> dict[int, str]:
    """Which of FILES (as given, relative to CWD; NAMES: relative_files' answer for them) name nothing in
    the work tree nor in the index, by index, with what to say about each (the repository's path of that
    name when there is one: `src/x.py` given from tests/). A stat per file; git is asked only about those
    missing from the work tree (a file deleted but still staged is checked). SKIPPED (`--team`, in CI,
    whose list of changed files names the deleted ones): each also says it was skipped as deleted."""
    absent = [i for i, name in enumerate(files) if not os.path.lexists(os.path.join(cwd, name))]
    if not absent:
        return {}
    real_root = os.path.realpath(root)
    inside = {i: path for i in absent if (path := _in_repository(real_root, cwd, files[i])) is not None}
    staged: set[str] = set()
    if inside:
        literal = [f":(literal){path}" for path in inside.values()]  # `*.py` given is that name, no pattern
        code, out = gitcmd.run_ok(["ls-files", "-z", "--cached", "--", *literal], root)
        staged = {paths.tracked_name(p) for p in out.split(b"\0") if p} if code == 0 else set()
    said: dict[int, str] = {}
    for i in absent:
        if i in inside and (names[i] in staged or any(p.startswith(names[i] + "/") for p in staged)):
            continue  # deleted from the work tree, still in the index (a folder: a file of it)
        given = files[i]
        text = f"no such file: {one_line(names[i])} (paths are relative to the current folder)"
        if not os.path.isabs(given) and os.path.realpath(cwd) != real_root and os.path.lexists(root / given):
            text += f"; did you mean {one_line(Path(os.path.normpath(given)).as_posix())}?"
        said[i] = text + (SKIPPED if skipped else "")
    return said


def _ancestors(path: str) -> list[str]:
    """'src/a/b.py' → ['src/a', 'src']: a command naming a directory covers the files inside it."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]


def module_name(path: str) -> str | None:
    """The name a command would use for PATH's module ('src/cache.py' → 'cache'), or None if too generic."""
    p = Path(path)
    if p.suffix.lower() in _NOT_CODE:
        return None
    stem = p.stem
    if stem in ("__init__", "__main__"):
        stem = p.parent.name
    if len(stem) < 3 or stem.lower() in _GENERIC_STEMS:
        return None
    return stem


def _cannot_be_made(root: Path, blocked: tuple[str, str]) -> str:
    """Why nothing was checked when something is in the place of ROOT's .nexusmem/ (paths.state_in_the_way):
    `nexusmem sync`, the usual advice, stops on it."""
    return (
        f"{root} has no NexusMem memory, and `nexusmem sync` cannot make one ({blocked[0]}; {blocked[1]}):"
        " nothing checked"
    )


def check(
    root: Path,
    files: Sequence[str],
    *,
    now_ms: int | None = None,
    days: int = WINDOW_DAYS,
    churn_threshold: int = CHURN_THRESHOLD,
    author: str | None = None,
    team: Any = None,
    memory: Path | None = None,
) -> PrecheckResult:
    """Findings for FILES (repository-relative) from ROOT's memory, or from TEAM (an open team store:
    `precheck --team` in a fresh CI checkout, which has no memory of its own). A missing memory is not an
    error. MEMORY: the work tree whose memory holds ROOT's history (a linked worktree's main work tree);
    the hook log's unsynced commands are still those run in ROOT.

    AUTHOR (nexusmem.authors: me, agents, a name) keeps the failures of commands by that author; any
    author's later success still resolves a failure (the agent re-ran your test and it passed)."""
    from nexusmem.store.hookreads import HookReader

    files = list(dict.fromkeys(files))
    memory = root if memory is None else memory
    result = PrecheckResult(root=str(memory), files=files)
    db = paths.db_path(memory)
    if team is None and not db.exists():
        result.checked = False
        if stashed := paths.stashed_unless_building(memory):  # `nexusmem sync` stops on it too
            result.reason = f"{paths.stashed_text(memory, stashed)}: nothing checked"
        elif paths.first_sync_under_way(memory):
            result.reason = f"the memory of {memory} is still being built{paths.first_sync_where(memory)}: nothing checked yet"
        elif blocked := paths.state_in_the_way(paths.state_dir(memory)):  # `nexusmem sync` stops on it
            result.reason = _cannot_be_made(memory, blocked)
        elif paths.state_dir(memory).is_dir():  # memory.db deleted (or only a committed config came)
            result.reason = f"{paths.state_dir(memory)} holds no memory.db: nothing checked (run `nexusmem sync` to build it)"
        else:
            result.reason = (
                f"{memory} has no NexusMem memory (.nexusmem/): nothing checked (run `nexusmem sync`)"
            )
        return result
    if not files:
        return result
    now = int(time.time() * 1000) if now_ms is None else now_ms
    start, end = now - days * DAY_MS, now + FUTURE_SLACK_MS
    # Read-only and never migrated: a commit hook must not rewrite the database (an older schema already
    # has every table and column read here), and a sync may be writing it at this very moment.
    via: dict[str, list[Finding]] = {}
    importers: list[tuple[str, str]] = []  # (file, a file importing it): local memory only
    gone: frozenset[str] = frozenset()  # stored commits no ref reaches now (_left_behind)
    churn_known = True
    if team is not None:
        # The team store: stored commands and commits only (no hook log, no import edges in it).
        lookup = sorted({p for f in files for p in (f, *_ancestors(f))})
        team_commands = team.shell_commands_between(start, end)
        naming = team.nodes_naming(lookup, ("shell_command", "git_commit"), start, end)
        team_open = _open_failures(team_commands, _team_author(team, author, start, end))
        named_by = _files_named(
            files, team_open, naming, by_name=True, roots=(str(root),), shared=SharedNames(root, root)
        )

        def team_files(ids: list[str]) -> dict[str, set[str]]:
            found: dict[str, set[str]] = {}
            for node_id, path in team.files_of_many(ids):
                found.setdefault(node_id, set()).add(path)
            return found

        named_by = _without_narrower_passes(named_by, team_open, team_commands, team_files)
        failures, _again = _unresolved_failures(team, team_open, named_by, by=team.recorded_by_of)
    else:
        with HookReader(db) as store:
            gone, churn_known = _left_behind(root, memory, store, result)
            commands = store.shell_commands_between(start, end)
            # Stored edges only (one indexed read): precheck never parses source files.
            importers = [(dst, src) for dst, src in store.importers_of(files) if src not in files]
            importer_paths = sorted({src for _dst, src in importers})
            own = {p for f in files for p in (f, *_ancestors(f))}
            stored_naming = store.nodes_naming(sorted(own), ("shell_command", "git_commit"), start, end)
            extra = {p for f in importer_paths for p in (f, *_ancestors(f))} - own
            cursor = store.cursor("shell")
            who: dict[str, dict[str, str]] | None = None
            if author is not None:
                who = store.shell_command_authors(start, end)
            author_ok = (
                None
                if who is None
                else (lambda node_id: authors.keeps(author, "shell_command", who.get(node_id, {})))
            )

            # A linked worktree's commands are told from its main work tree, as the stored ones are.
            home = None if memory == root else memory
            typed = _unsynced_read(root, cursor, home)  # the hook log's unsynced tail, read once, as typed
            if typed:
                typed = _not_forgotten(typed, store.deny_entries(), result.notes)
            normalised: dict[tuple[str, str], str] = {}  # each command's text as compared, both answers
            shared_names = SharedNames(root, memory)

            def shells_of(tail: list[TailCommand]) -> Callable[[list[str]], dict[str, str]]:
                """The shells of some commands: the tail's lines say theirs, the store the others'."""

                def shells(ids: list[str]) -> dict[str, str]:
                    found = {t.key: t.shell for t in tail}
                    return {**store.shells_of([i for i in ids if i not in found]), **found}

                return shells

            def findings(
                tail: list[TailCommand],
            ) -> tuple[
                list[tuple[str, str, str]],
                dict[str, list[Finding]],
                dict[str, list[Finding]],
                list[OpenFailure],
            ]:
                """Naming, findings by file and by importer, and the open failures when the answer is to be
                taken again from the tail redacted (none: this answer stands)."""
                merged, naming, from_tail = _with_unsynced(
                    commands,
                    stored_naming,
                    own | extra,
                    start,
                    end,
                    tail,
                    who=who,
                    secondhand=store.secondhand_keys,
                )
                open_failures = _open_failures(merged, author_ok, normalised, shells_of(tail))
                if extra and open_failures:
                    # The importers' paths named by open failures: the files of those few commands, not every
                    # node naming each importer (a file of a long history is named by hundreds of commits).
                    named = store.files_of_many([f[0] for f in open_failures])
                    naming = naming + [
                        (path, node_id, "shell_command") for node_id, path in named if path in extra
                    ]
                named_files = _files_named(
                    files,
                    open_failures,
                    naming,
                    by_name=True,
                    roots=(str(memory), str(root)),
                    shared=shared_names,
                )
                tail_files = {t.key: t.files for t in tail}

                def files_of(ids: list[str]) -> dict[str, set[str]]:
                    found = {i: set(tail_files[i]) for i in ids if i in tail_files}
                    for node_id, path in store.files_of_many([i for i in ids if i not in tail_files]):
                        found.setdefault(node_id, set()).add(path)
                    return found

                named_files = _without_narrower_passes(
                    named_files, open_failures, merged, files_of, normalised
                )
                failures, redacted_value = _unresolved_failures(
                    store, open_failures, named_files, (memory, root), merged
                )
                # An importer's failures count only when the command names the importer's path (or a folder
                # holding it): its bare module name would widen a guess into a wrong warning.
                via: dict[str, list[Finding]] = {}
                named_importers: dict[str, set[str]] = {}
                if importer_paths:
                    named_importers = _without_narrower_passes(
                        _files_named(importer_paths, open_failures, naming, by_name=False),
                        open_failures,
                        merged,
                        files_of,
                        normalised,
                    )
                    via, redacted_via = _unresolved_failures(
                        store, open_failures, named_importers, (memory, root), merged
                    )
                    redacted_value = redacted_value or redacted_via
                # Redacting the tail's commands can only merge commands (resolving more failures) and take
                # words out of them, so the answer from the tail as typed stands unless a failure from the tail
                # is still open (it may be shown: never as typed), or a failure weighed holds a redacted value
                # (a redacted tail command might be its retry).
                # Only the failures that name a file checked (or an importer's path) can be shown or matter:
                # the others stay as typed (redacting them was ~0.1 ms each, 0.8 s for an agent's 7,000
                # unsynced failing runs of other files).
                relevant = [f for f in open_failures if f[0] in named_files or f[0] in named_importers]
                if from_tail and (redacted_value or any(f[0] in from_tail for f in relevant)):
                    return naming, failures, via, relevant
                return naming, failures, via, []

            naming, failures, via, open_typed = findings(typed)
            if open_typed:
                from nexusmem.sources.shell.tail import with_texts

                texts = _texts_to_redact(typed, open_typed)
                naming, failures, via, _ = findings(with_texts(root, typed, texts, home=home))
    churn: dict[str, set[str]] = {}
    for path, node_id, kind in naming:
        if kind == "git_commit" and churn_known and node_id not in gone:
            churn.setdefault(path, set()).add(node_id)
    by_file: dict[str, list[str]] = {}
    for dst, src in importers:
        by_file.setdefault(dst, []).append(src)
    for path in files:
        result.findings.extend(failures.get(path, []))
        result.findings.extend(_importer_findings(path, by_file.get(path, []), via, failures.get(path, [])))
        commits = len(churn.get(path, ()))
        if commits >= churn_threshold:
            result.findings.append(
                Finding(
                    path=path,
                    kind="churn",
                    commits=commits,
                    message=(
                        f"{one_line(path)}: changed in {commits} commits in the last {days} days (high churn)"
                        " — review the whole diff and run its tests"
                    ),
                )
            )
    return result


def _left_behind(
    root: Path, memory: Path, store: HookReader, result: PrecheckResult
) -> tuple[frozenset[str], bool]:
    """The ids of the stored commits no ref reaches now, and whether the commits counted can be told at all.

    No hook runs on a reset (nor on a checkout): after `git reset --hard HEAD~2` the memory still holds the
    two commits dropped, and counting them as churn refused every retry of a --strict commit (the refused
    commit never reached the post-commit sync that would prune them). No process while HEAD (read from its
    files) is where the memory's last sync saw it, the usual case; else one `git rev-list` names the commits
    that memory's HEAD reached and no ref reaches now, which the next sync prunes: they do not count as
    churn. When git cannot name them (the old HEAD pruned), churn is not counted (it
    would refuse a --strict commit on commits no branch has). A note on RESULT says which."""
    moved = synced_head.head_moved(memory, store.synced_git_cursor())
    if moved is None:
        return frozenset(), True
    left = synced_head.gone_commits(root, moved["memory_at"], moved["head"])
    where = f"HEAD is {moved['head'][:10]}, memory is at {moved['memory_at'][:10]}"
    if left is None:
        result.notes.append(
            f"{where} (a reset or a rebase since the last sync), and git cannot say which commits no branch has"
            " now: churn not counted; run `nexusmem sync`"
        )
        return frozenset(), False
    if not left:  # on a branch still (a checkout, a sync not caught up yet): as the next sync counts them
        return frozenset(), True
    result.notes.append(
        f"{where}: {len(left)} commit(s) a reset or a rebase left behind (no branch has them now) are not"
        " counted; run `nexusmem sync`"
    )
    return frozenset(store.commit_ids(left)), True


def _importer_findings(
    path: str, importers: list[str], via: dict[str, list[Finding]], own: list[Finding]
) -> list[Finding]:
    """PATH's warnings from the failures of the files importing it: one per command, newest first, none for
    a command already reported for PATH itself."""
    seen = {(resolved.normalise(f.command or ""), f.folder) for f in own}
    found: list[Finding] = []
    for importer in importers:
        for failure in via.get(importer, []):
            compared = (resolved.normalise(failure.command or ""), failure.folder)
            if compared in seen:
                continue
            seen.add(compared)
            shown = " ".join((failure.command or "")[:119].split())
            # Where it ran, as the importer's own finding says it (`node ../tests/util.test.js` in lib).
            where = f" in {one_line(failure.folder)}" if failure.folder else ""
            found.append(
                Finding(
                    path=path,
                    kind="importer_failure",
                    command=failure.command,
                    exit=failure.exit,
                    ts=failure.ts,
                    times=failure.times,
                    importer=importer,
                    folder=failure.folder,
                    message=(
                        f"{one_line(path)}: imported by {one_line(importer)}, whose `{shown}`{where} failed (exit {failure.exit}) on"
                        f" {timefmt.day(failure.ts or 0)} and was never seen passing — run it before committing"
                    ),
                )
            )
    found.sort(key=lambda f: f.ts or 0, reverse=True)
    return found[:MAX_FAILURES_PER_FILE]


def _synced_offset(cursor: str | None, st: os.stat_result) -> int:
    """Where the last sync stopped reading the log (0 when unknown or another file): a cheap pre-check, the
    shell source re-validates it."""
    try:
        pos = json.loads(cursor or "")["log"]
        if (pos["dev"], pos["ino"]) == (st.st_dev, st.st_ino):
            return int(pos["offset"])
    except (ValueError, TypeError, KeyError):
        pass
    return 0


def _unsynced_read(root: Path, cursor: str | None, home: Path | None) -> list[TailCommand]:
    """The hook log's commands in ROOT past its shell cursor (see the module docstring), as typed: never to be
    shown before with_texts() has redacted them (_texts_to_redact)."""
    try:
        st = os.stat(paths.shell_log_path())
    except OSError:
        return []
    if st.st_size <= _synced_offset(cursor, st):
        return []  # the usual case right after a sync: no import, no read
    from nexusmem.sources.shell import tail as shell_tail

    # HOME: the memory's work tree when it is not ROOT (`../repo-wt` for a worktree's folders).
    return shell_tail.unsynced_tail(root, cursor, redacted=False, home=home)


def _not_forgotten(
    tail: list[TailCommand], stored: list[dict[str, Any]], notes: list[str]
) -> list[TailCommand]:
    """TAIL without the commands a deny-list entry matches (STORED: the store's entries; the user-wide list
    too), as the sync's gate will drop them: a forgotten value is never shown, not even before the next sync
    blanks its log line. Nothing is imported or read when there is no entry (the user-wide file: one stat);
    each distinct (command, folder) is matched once (an agent's day repeats a few hundred). A deny-list that
    cannot be read leaves the tail out, with a note in NOTES: the synced memory is still checked (a --strict
    hook still refuses on it), and nothing that may have been forgotten is shown."""
    if not stored and not os.path.exists(paths.user_deny_list()):
        return tail
    from nexusmem.hygiene.denylist import DenyListError, Matcher, entry_from_json, load_global

    try:
        matcher = Matcher([*(entry_from_json(row, str(row["scope"])) for row in stored), *load_global()])
    except DenyListError as exc:
        notes.append(f"the hook log's unsynced commands were not checked: {exc}")
        return []
    if not matcher:
        return tail
    kept: dict[tuple[str, str], bool] = {}
    for t in tail:
        if (t.command, t.cwd) not in kept:
            kept[(t.command, t.cwd)] = matcher.which([t.command, t.cwd]) is None
    return [t for t in tail if kept[(t.command, t.cwd)]]


def _with_unsynced(
    commands: list[tuple[str, str, int, str | None, int | None]],
    naming: list[tuple[str, str, str]],
    lookup: set[str],
    start: int,
    end: int,
    read: list[TailCommand],
    *,
    who: dict[str, dict[str, str]] | None = None,
    secondhand: Callable[[list[str]], dict[str, tuple[str, int | None]]] | None = None,
) -> tuple[list[tuple[str, str, int, str | None, int | None]], list[tuple[str, str, str]], set[str]]:
    """COMMANDS and NAMING with READ (the hook log's unsynced tail) added, and the ids the tail's commands
    take in them (none: the tail added nothing). The tail's authors go into WHO when it is given.

    An agent's call already stored from its transcript (SECONDHAND: natural key → (id, exit code)) and now in
    the tail as its hook's line is one command, not two: the line takes the stored node's place (and id, so
    its links count), with the hook's exit code, or the transcript's when the hook could not tell (Codex's
    says none), as the next sync will store it."""
    tail = [t for t in read if start <= t.ts < end]
    if not tail:
        return commands, naming, set()
    known = {(command, ts) for _id, command, ts, _cwd, _code in commands}
    fresh = [t for t in tail if (t.command, t.ts) not in known]  # a sync may have raced this read
    keyed = [t.call_key for t in fresh if t.call_key is not None]
    stored_as = secondhand(keyed) if keyed and secondhand is not None else {}
    if stored_as:
        fresh = [
            t.rekeyed(*stored_as[t.call_key]) if t.call_key is not None and t.call_key in stored_as else t
            for t in fresh
        ]
        replaced = {node_id for node_id, _ in stored_as.values()}
        commands = [c for c in commands if c[0] not in replaced]
    if who is not None:
        who.update({t.key: {"author": t.author, "author_kind": t.author_kind} for t in fresh})
    merged = sorted(
        [*commands, *((t.key, t.command, t.ts, t.cwd, t.exit) for t in fresh)], key=lambda c: c[2]
    )
    named = [*naming, *((f, t.key, "shell_command") for t in fresh for f in t.files if f in lookup)]
    return merged, named, {t.key for t in fresh}


def _texts_to_redact(tail: list[TailCommand], open_failures: list[OpenFailure]) -> dict[str, str]:
    """Typed text → redacted text of the commands of TAIL (read as typed) that the answer needs redacted:
    every failing one it may show (OPEN_FAILURES: the open failures that name a file checked; whatever it
    can show is redacted; a failure never resolves another, so the rest stay as typed), and every passing one
    that could, once redacted, be the retry of a failure open in the answer from the tail as typed
    (OPEN_FAILURES). The others stay as typed and are never shown (a success never is): they resolve nothing
    either way, so the answer is the one redacting every command gives, for a fraction of the redactions (the
    benchmark's tail: 50 of 200 commands, ~0.1 ms each).

    Why a success left out resolves nothing: redaction replaces spans of a text by placeholders (which hold no
    whitespace) and keeps the rest byte for byte, so each placeholder-free word (whitespace-separated) of a
    redacted text is a whole word of the text it came from. A success T is the retry of a failure F only if
    redact(T) and redact(F) compare the same (nexusmem.resolved.normalise, which only ever drops words), or
    redact(T) as redact(F) does with its pytest node ids' files instead (resolved.whole_files), so only if
    every placeholder-free word of redact(F) as compared, or of that form of it, is a word of T: a T failing that test is left
    as typed, and as typed it does not compare as redact(F) either (redact(F) redacts to itself, T does not). Redacting only ever resolves failures, never opens one, so the
    failures open in the typed answer are all it can be tested against."""
    from nexusmem.redact import redact

    texts: dict[str, str] = {}
    shown = {f[1] for f in open_failures}  # by text: a call also seen in a transcript has that node's id
    for t in tail:
        # failed (None: exit unknown, neither fails nor resolves) and may be shown
        if resolved.failed(t.exit) and t.command in shown and t.command not in texts:
            texts[t.command] = redact(t.command)
    # Each open failure's placeholder-free words, filed per cwd under its longest word.
    needs: dict[tuple[str | None, str], list[frozenset[str]]] = {}
    anything: set[str | None] = set()  # the cwds of a failure whose every word is a placeholder
    for _id, command, _ts, cwd, _code in open_failures:
        # The words compared (resolved.normalise): `pytest | tee log`'s retry `pytest` has no word `tee`.
        compared = resolved.normalise(texts.get(command, command), cwd)
        # A node id's failure is also resolved by its file's run (resolved.whole_files): the words of both.
        for form in {compared, resolved.whole_files(compared)}:
            words = frozenset(w for w in form.split() if PLACEHOLDER not in w)
            if words:
                needs.setdefault((cwd, max(words, key=len)), []).append(words)
            else:
                anything.add(cwd)
    tried: set[tuple[str, str]] = set()
    for t in tail:
        if t.exit != 0 or t.command in texts or (t.command, t.cwd) in tried:
            continue
        tried.add((t.command, t.cwd))
        typed = set(t.command.split())
        if t.cwd in anything or any(w <= typed for word in typed for w in needs.get((t.cwd, word), ())):
            texts[t.command] = redact(t.command)
    return texts


OpenFailure = tuple[str, str, int, "str | None", int]


def _open_failures(
    commands: list[tuple[str, str, int, str | None, int | None]],
    author_ok: Callable[[str], bool] | None = None,
    normalised: dict[tuple[str, str], str] | None = None,
    shells: Callable[[list[str]], dict[str, str]] | None = None,
) -> list[OpenFailure]:
    """(id, command, ts, cwd, exit) of the failures no later run of the same command resolved (of the
    authors AUTHOR_OK keeps). NORMALISED: resolved.retries' cache, for a second sweep over the same window.
    SHELLS (some ids -> the shell each was typed in) leaves out the lines that ran nothing of their command
    (`time -p pytest` in zsh or fish: launchers.runs_nothing)."""
    # A failure is resolved by a later success of the same command in the same directory (nexusmem.resolved;
    # the window holds every command later than any failure in it), or by a retry link the linker recorded.
    found, resolved_by = resolved.retries(
        ((node_id, ts, command, cwd, code) for node_id, command, ts, cwd, code in commands),
        within_ms=None,
        normalised=normalised,
    )
    out = [
        (node_id, command, ts, cwd, code)
        for node_id, ts, command, cwd, code in found
        if node_id not in resolved_by
        and code is not None
        and (author_ok is None or author_ok(node_id))
        and not _git_only(command)
        and not (code == 5 and _no_test_failed(command))
    ]
    timed = [f[0] for f in out if f[1].lstrip()[:6] == "time -"]  # rare: one read only for those
    if shells is None or not timed:
        return out
    from nexusmem.sources.shell.launchers import runs_nothing

    said = shells(timed)
    return [f for f in out if not runs_nothing(f[1], said.get(f[0]))]


# A command's start: blanks and `NAME=value` environment assignments before the program.
_COMMAND_START = r"\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"


def _no_test_failed(command: str) -> bool:
    """Whether COMMAND, which exited 5, is pytest's "no tests collected" (launchers.no_test_failed)."""
    from nexusmem.sources.shell.launchers import no_test_failed  # a failure's exit 5 only

    return no_test_failed(command, 5)


# `git add x && git commit -m` that failed (no message, no identity) names x, but it is no check of x:
# "run it before committing" about a commit is nonsense. A line whose every command is git's is left out.
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")
_GIT_COMMAND = re.compile(_COMMAND_START + r"(?:command\s+)?git(?:\s|$)")


def _git_only(command: str) -> bool:
    parts = [p for p in _SEGMENTS.split(command) if p.strip()]
    return bool(parts) and all(_GIT_COMMAND.match(p) for p in parts)


# An output redirection and its target (`>> src/x.py`, `2>err.log`, `&> out`, `>|f`, `2>&1`): a file the line
# writes to, not one it runs or tests.
_REDIRECT_TARGET = re.compile(r"(?:\d|&)?>>?[|&]?\s*[^\s;&|]+")


def _running_text(command: str) -> str:
    """COMMAND with what names no file it runs or tests blanked out, every other character where it was: the
    targets of its output redirections (`echo "# 6" >> src/tz.py`) and its git commands' words (`git add -A
    src; time git commit -qm …`: a commit is no check to run before committing, and what it adds is no file
    the line tested; a line of git commands alone is left out whole: _git_only)."""
    if ">" not in command and "git" not in command:
        return command  # the usual case
    text = list(command)
    for match in _REDIRECT_TARGET.finditer(command):
        text[match.start() : match.end()] = " " * (match.end() - match.start())
    if "git" in command:
        from nexusmem.sources.shell.launchers import command_start  # only for a line naming git

        at = 0
        for separator in (*_SEGMENTS.finditer(command), None):
            end = len(command) if separator is None else separator.start()
            words = [m for m in _WORD.finditer(command, at, end)]
            first = command_start([m.group() for m in words])
            if first < len(words) and words[first].group().lstrip("({").rsplit("/", 1)[-1] == "git":
                text[at:end] = " " * (end - at)
            at = end if separator is None else separator.end()
    return "".join(text)


def _running_cached(command: str, running: dict[str, str]) -> str:
    """_running_text of COMMAND, kept in RUNNING (a real log repeats a few hundred commands)."""
    text = running.get(command)
    if text is None:
        text = running[command] = _running_text(command)
    return text


def _still_named(path: str, command: str, running: dict[str, str]) -> bool:
    """Whether COMMAND, a failed line whose words name the repository path PATH (a file or a folder), names it
    outside what _running_text blanks out: by its last part, where the line ran it or tested it. RUNNING
    caches the blanked text of each command (_running_cached)."""
    text = _running_cached(command, running)
    if text == command:
        return True
    name = re.escape(path.rstrip("/").rsplit("/", 1)[-1])
    return re.search(rf"(?<![\w.-]){name}(?![\w-])", text) is not None


# Tools whose arguments are hosts, URLs and what is asked of them there (`curl localhost:8080/cart`, `ssh
# deploy@web 'systemctl restart stock'`): no word of theirs is a repository file's bare name.
_REMOTE_TOOLS = frozenset(
    {"ssh", "scp", "sftp", "mosh", "rsync", "curl", "wget", "http", "https", "xh", "nc", "ncat", "telnet",
     "ping", "dig", "nslookup", "host", "traceroute"}
)  # fmt: skip
# Container and service tools: their plain words are containers, images, pods and services (`docker logs
# network`, `kubectl logs deploy/orders`); a file they are given to run (`docker compose run app pytest
# tests/test_cart.py`) still names its module, by its file name.
_CONTAINER_TOOLS = frozenset(
    {"docker", "docker-compose", "podman", "nerdctl", "kubectl", "oc", "helm", "minikube", "systemctl",
     "service", "journalctl"}
)  # fmt: skip
# Commands whose words are folders (`cd network && make`, `pushd coupons`): no module's bare name.
_FOLDER_TOOLS = frozenset({"cd", "pushd", "popd", "builtin"})
# make and its kin: their plain words are targets (`make -C sub check`), which name no module, as a tool's
# subcommand does not (_SUBCOMMAND_TOOLS); a file it is given (`-f check.mk`) is named by its path, and so
# is a setting's value (`FILE=check.py`: _own_stem).
_MAKE_TOOLS = frozenset({"make", "gmake", "bmake", "remake"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _naming_text(command: str, roots: Sequence[str]) -> str:
    """COMMAND with the words that name no repository file by a bare module name blanked out: one holding a
    URL (`http://127.0.0.1:9/api/cart`), an absolute path outside ROOTS (the repository's work trees:
    `ls /var/log/pricing`, `tail ~/logs/stock`, `--log=/tmp/cart.log`), the arguments of a remote tool, and
    those of a container tool but the file names among them (_REMOTE_TOOLS, _CONTAINER_TOOLS), make's targets
    and options (_MAKE_TOOLS: `make -C sub check`; its `NAME=value` settings stay). The rest
    stays where it was (a name holding a newline still matches). The tool is the word past those that only
    launch it (sources.shell.launchers: `sudo -u deploy docker logs x`, `( cd sub && make )`)."""
    from nexusmem.sources.shell.launchers import command_start  # only for a line naming a staged module

    text = list(command)
    at = 0
    for separator in (*_SEGMENTS.finditer(command), None):
        end = len(command) if separator is None else separator.start()
        words = [(m.start(), m.group()) for m in _WORD.finditer(command, at, end)]
        at = end if separator is None else separator.end()
        first = command_start([word for _, word in words])
        program = words[first][1].rsplit("/", 1)[-1] if first < len(words) else ""
        program = program.lstrip("({")
        remote = program in _REMOTE_TOOLS or program in _FOLDER_TOOLS
        container = program in _CONTAINER_TOOLS
        make = program in _MAKE_TOOLS
        for index, (start, word) in enumerate(words):
            bare = word.strip("'\"")
            value = bare.rsplit("=", 1)[-1]  # `--log-file=/var/log/cart.log`: the path given
            if (
                (make and index > first and (bare[:1] == "-" or "=" not in bare))
                or remote
                or "://" in bare
                or (value.startswith(("/", "~")) and not _inside(value, roots))
                or (container and not _FILE_WORD.match(value.rsplit("/", 1)[-1]))
            ):
                text[start : start + len(word)] = " " * len(word)
    return "".join(text)


_WORD = re.compile(r"\S+")


def _inside(path: str, roots: Sequence[str]) -> bool:
    """Whether the absolute PATH (`~` for the home folder) lies in one of ROOTS."""
    full = os.path.normpath(os.path.expanduser(path))
    return any(full == root or full.startswith(root.rstrip("/") + "/") for root in roots)


def _files_named(
    files: list[str],
    open_failures: list[OpenFailure],
    naming: list[tuple[str, str, str]],
    *,
    by_name: bool,
    roots: Sequence[str] = (),
    shared: SharedNames | None = None,
) -> dict[str, set[str]]:
    """Which of FILES each of OPEN_FAILURES names: through node_files (the file or a parent directory), or,
    BY_NAME, its module name in the command's words (not in a URL, an absolute path outside ROOTS or what a
    remote or container tool was asked about: _naming_text). When SHARED says another tracked file bears
    that name too, only the files of that name the failing test file's imports name (SharedNames.imported):
    `pytest tests/test_easter.py` doing `from dateutil import easter` names dateutil/easter.py, never
    docs/samples/easter.py."""
    by_id: dict[str, set[str]] = {}
    wanted = set(files)
    dirs: dict[str, list[str]] = {}
    for path in files:
        for parent in _ancestors(path):
            dirs.setdefault(parent, []).append(path)
    command_of = {failure[0]: failure[1] for failure in open_failures}
    running: dict[str, str] = {}  # command -> _running_text of it
    for path, node_id, kind in naming:
        if kind != "shell_command":
            continue
        command = command_of.get(node_id)
        if command is not None and not _still_named(path, command, running):
            continue  # `echo "# 6" >> src/tz.py; git add -A src; …`: written to and added, not run
        if path in wanted:
            by_id.setdefault(node_id, set()).add(path)
        for child in dirs.get(path, ()):
            by_id.setdefault(node_id, set()).add(child)
    stems: dict[str, list[str]] = {}
    for path in files if by_name else ():
        name = module_name(path)
        if name:
            stems.setdefault(name, []).append(path)
    if stems:
        names_in = _names_finder(stems)
        naming_texts: dict[str, str] = {}  # a real log repeats a few hundred commands
        by_word: dict[str, set[str]] = {}  # failure id -> the module names that tie it to a file checked
        ran: dict[str, tuple[str, str | None]] = {}  # failure id -> its text as _naming_text left it, cwd
        for node_id, command, _ts, cwd, _code in open_failures:
            hits = names_in(command)
            if not hits:
                continue  # the usual case: no staged module's name in it
            text = naming_texts.get(command)
            if text is None:
                text = naming_texts[command] = _naming_text(_running_cached(command, running), roots)
            hits = names_in(text) if text != command else hits
            words = command.split()
            # A file the command names by its own name (`bash deploy.sh`, run in services/api) is that file,
            # found by its path where the command ran (node_files), not every file of that name
            # (services/web/deploy.sh); a test file's name still names the module it tests (test_cache.py).
            # A subshell's brackets may hold on to it: `(cd sub && python3 ./check.py)`; so may a setting
            # (`make lint FILE=check.py` names check.py where it ran, not sub/check.mk).
            own = {stem for w in words if (stem := _own_stem(w))}
            # The subcommand of a tool (`npm run build`, `cargo check`) names no module (run.py, check.rs).
            subcommand = words[1] if len(words) > 1 and words[0] in _SUBCOMMAND_TOOLS else None
            for hit in hits:
                if hit in own or (hit == subcommand and command.count(hit) == 1):
                    continue
                by_word.setdefault(node_id, set()).add(hit)
                ran[node_id] = (text, cwd)
        used = {hit for hits in by_word.values() for hit in hits}
        ambiguous = shared.shared({hit: stems[hit] for hit in used}) if shared is not None and used else set()
        for node_id, hits in by_word.items():
            for hit in hits - ambiguous:
                by_id.setdefault(node_id, set()).update(stems[hit])
            if shared is None:
                continue  # no name is ambiguous then
            for hit in hits & ambiguous:
                tested = shared.imported(*ran[node_id], hit, stems[hit])
                if tested:
                    by_id.setdefault(node_id, set()).update(tested)
    return by_id


_ALNUM = re.compile(r"[A-Za-z0-9]")


def _names_finder(stems: dict[str, list[str]]) -> Callable[[str], set[str]]:
    """A finder of the module names of STEMS that a text holds as words, every one of them, one inside
    another too: `tests/test_calc.py` holds `test_calc` and `calc` (checking both files, each is named, as
    each is when checked alone). Word boundaries are anything but letters and digits, so
    `tests/test_cache.py` names `cache`."""
    longest_first = sorted(stems, key=len, reverse=True)
    # One scan: at each place a name starts, the longest there (a lookahead, so that a name starting inside
    # it is found too), and the shorter ones it starts with that end on a boundary there (`foo` in `foo_bar`).
    pattern = re.compile(
        r"(?<![A-Za-z0-9])(?=(" + "|".join(map(re.escape, longest_first)) + r")(?![A-Za-z0-9]))"
    )
    within = {
        name: [
            short
            for short in longest_first
            if len(short) < len(name) and name.startswith(short) and not _ALNUM.match(name[len(short)])
        ]
        for name in longest_first
    }

    def names_in(text: str) -> set[str]:
        hits = set(pattern.findall(text))
        for hit in list(hits):
            hits.update(within[hit])
        return hits

    return names_in


class SharedNames:
    """For _files_named: which module names more than one tracked file bears, and which of those files a
    failing test file's imports name. ROOT: the checkout whose index is asked; BASE: the work tree a
    command's folder is told from (the memory's: `../repo-wt` for a linked worktree's commands). Nothing is
    asked or read until a failure names a checked file by its module name; the answers are kept, as the
    answer taken again from the tail redacted asks again."""

    def __init__(self, root: Path, base: Path) -> None:
        self.root = root
        self.base = base
        self.known: dict[str, bool] = {}  # name -> shared
        self.imports: dict[str, set[str]] = {}  # test file (absolute) -> the dotted names its imports name

    def shared(self, names: dict[str, list[str]]) -> set[str]:
        """Of NAMES (module names, each with the files checked that bear it), those that more than one file
        of ROOT's index (or of those checked) bears. One `git ls-files`; a git that cannot answer leaves
        every name to its files."""
        known = self.known
        asked = sorted(name for name in names if name not in known)
        specs = [
            f":(glob)**/{_glob_escaped(name)}{tail}"
            for name in asked
            for tail in (".*", "/__init__.py", "/__main__.py")
        ]
        code, out = (
            gitcmd.run_ok(["ls-files", "-z", "--cached", "--", *specs], self.root) if asked else (0, b"")
        )
        if code != 0:
            return {name for name in names if known.get(name)}
        bearers: dict[str, set[str]] = {name: set(names[name]) for name in asked}
        for raw in out.split(b"\0"):
            path = paths.tracked_name(raw) if raw else ""
            name = module_name(path) if path else None
            if name in bearers:
                bearers[name].add(path)
        known.update((name, len(found) > 1) for name, found in bearers.items())
        return {name for name in names if known[name]}

    def imported(self, command: str, cwd: str | None, name: str, bearers: list[str]) -> set[str]:
        """The files of BEARERS (checked, each bearing the shared module NAME) that the Python test files
        COMMAND names by a path bearing NAME (from CWD, the folder it ran in) import by their dotted module
        path (_dotted_paths): `from dateutil import easter`, `from dateutil.easter import easter` and
        `import dateutil.easter` name dateutil/easter.py (or src/dateutil/easter.py). Only those test
        files are read, and only their import lines (_imported_names)."""
        tied: dict[str, str] = {}  # a dotted path -> the file bearing it
        for path in bearers:
            if path.endswith(_PYTHON):
                tied.update(dict.fromkeys(_dotted_paths(path), path))
        if not tied:
            return set()
        found: set[str] = set()
        for full in self._test_files(command, cwd, name):
            if full not in self.imports:
                self.imports[full] = _imported_names(full)
            found.update(tied[dotted] for dotted in self.imports[full] if dotted in tied)
        return found

    def _test_files(self, command: str, cwd: str | None, name: str) -> list[str]:
        """The absolute paths of the Python test files COMMAND names by a word whose file name bears NAME
        (`tests/test_easter.py`, `test_easter.py::test_x` run in tests), told from CWD, inside BASE or ROOT (a
        test file by its path there: the folders above the repository say nothing)."""
        word = re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])")
        folder = os.path.join(self.base, cwd or "")
        found: list[str] = []
        for raw in command.split():
            given = raw.strip("'\"()").split("::", 1)[0]
            base_name = given.rsplit("/", 1)[-1]
            if not base_name.endswith(_PYTHON) or not word.search(base_name):
                continue
            full = os.path.normpath(os.path.join(folder, os.path.expanduser(given)))
            top = next((str(r) for r in (self.base, self.root) if _inside(full, (str(r),))), None)
            if top is not None and re.search(_TEST_FILE, os.path.relpath(full, top)) and full not in found:
                found.append(full)
        return found


_PYTHON = (".py", ".pyi")
# Import lines: `from A.b import (c, d)` (its names may go on over lines, in brackets or past a
# backslash), `import A.b as x, c`. A relative import (`from . import x`) names no module path.
_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#;\\]|\\\n?)*)", re.M
)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+((?:[^\n#;\\]|\\\n?)*)", re.M)
# A test file is read up to this much: its imports are at its top.
_IMPORTS_READ = 1 << 20


def _imported_names(full: str) -> set[str]:
    """The dotted module paths the import lines of the file FULL name: `from A.b import c` names A.b and
    A.b.c (c may be a module of A.b), `import A.b as x` names A.b; nothing when it cannot be read."""
    try:
        with open(full, "rb") as fh:
            text = fh.read(_IMPORTS_READ).decode("utf-8", "replace")
    except OSError:
        return set()
    names: set[str] = set()
    for module, what in _FROM_IMPORT.findall(text):
        names.add(module)
        for part in what.strip("()").replace("\\\n", " ").split(","):
            imported = part.split()
            if imported and imported[0] != "*":
                names.add(f"{module}.{imported[0]}")
    for what in _IMPORT.findall(text):
        for part in what.replace("\\\n", " ").split(","):
            imported = part.split()
            if imported:
                names.add(imported[0])
    return names


def _dotted_paths(path: str) -> list[str]:
    """The dotted module paths of the Python file PATH (repository-relative): its package folders and its
    name (`dateutil/easter.py` → dateutil.easter; a package's `__init__.py`, the package), and under a
    `src/` layout the same without `src` (`src/dateutil/easter.py` → dateutil.easter)."""
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    parts = parts[:-1] if stem in ("__init__", "__main__") else [*parts[:-1], stem]
    dotted = [".".join(parts)] if parts else []
    if len(parts) > 1 and parts[0] == "src":
        dotted.append(".".join(parts[1:]))
    return dotted


def _glob_escaped(name: str) -> str:
    """NAME matched literally in a `:(glob)` pathspec."""
    return "".join(f"[{c}]" if c in "*?[]\\" else c for c in name)


# The name of a file a setting's value gives (`FILE=sub/check.mk`), whatever its extension.
_SETTING_FILE = re.compile(r"^([\w-]+)\.[\w.-]+$")


def _own_stem(word: str) -> str | None:
    """The module name of the file the command's WORD names by its path (_FILE_WORD: `./check.py)` past a
    subshell's bracket, quotes); a `NAME=value` setting's value names one whatever its extension
    (`FILE=sub/check.mk`: sub/check.mk where the command ran, no other file named check)."""
    bare = word.strip("'\"()")
    if _ASSIGNMENT.match(bare):
        found = _SETTING_FILE.match(bare.split("=", 1)[1].strip("'\"").rsplit("/", 1)[-1])
    else:
        found = _FILE_WORD.match(bare.rsplit("/", 1)[-1])
    return found.group(1) if found else None


# A test file: named as one (test_cache.py, cache_test.go, slug.test.js, cache.spec.ts, CacheTest.java) or in
# a test folder.
_TEST_FILE = (
    r"(?:^|/)(?:tests?|specs?|__tests__|testing)/|(?:^|/)test_[^/]+$"
    r"|[^/](?:_test|_spec|[._-]test|[._-]spec)\.[A-Za-z0-9]+$|[A-Z][A-Za-z0-9]*Tests?\.[A-Za-z]+$"
)


def _without_narrower_passes(
    by_id: dict[str, set[str]],
    open_failures: list[OpenFailure],
    commands: list[tuple[str, str, int, str | None, int | None]],
    files_of: Callable[[list[str]], dict[str, set[str]]],
    normalised: dict[tuple[str, str], str] | None = None,
) -> dict[str, set[str]]:
    """BY_ID (failure id -> the checked files it names: _files_named) without the files for which a later
    run of a narrower form of that failed line passed: in the same folder, every word of it (as a retry
    compares it) among the failed line's words, its `NAME=value` settings kept, and naming every repository
    file that ties the failure to the file checked (the test files among them when there are some: the
    files it names that are the file, a folder holding it, or bear its module name). `node --test
    test/slug.test.js` passing clears `node --test --test-name-pattern x test/slug.test.js`, `git stash -q &&
    node --test test/slug.test.js; git stash pop -q` and `sed … lib/slug.js && git commit … && node --test
    test/slug.test.js` for lib/slug.js; a `cat` of the test file, a run with more options or one in another
    folder does not, nor does anything clear a failure tied to the file by a bare word (`pytest -k slug`).
    COMMANDS: (id, command, ts, cwd, exit) in time order; FILES_OF: the repository files of some nodes;
    NORMALISED: the texts as compared that _open_failures kept. Reads nothing unless a failure names a
    checked file and a command passed in its folder after it."""
    failed = [f for f in open_failures if f[0] in by_id and f[3] is not None]
    if not failed:
        return by_id
    if normalised is None:  # each distinct (command, folder) as compared: what _open_failures kept
        normalised = {}
        for _id, command, _ts, cwd, _code in commands:
            if cwd is not None and (command, cwd) not in normalised:
                normalised[(command, cwd)] = resolved.normalise(command, cwd)
    # Each failed line's words, its NAME=value settings, itself as compared (a pass of that is its retry).
    typed: dict[tuple[str, str], tuple[set[str], set[str], str]] = {}
    for _id, command, _ts, cwd, _code in failed:
        if cwd is not None and (command, cwd) not in typed:
            same = _compared(command, cwd, normalised)
            words = set(command.split()) | set(same.split())
            settings = {w for w in words if _ASSIGNMENT.match(w)} | _changing(command)
            typed[(command, cwd)] = (words, settings, same)
    folders: dict[str, set[str]] = {}  # folder -> every word of its failed lines
    for (_command, cwd), (failed_words, _settings, _same) in typed.items():
        folders.setdefault(cwd, set()).update(failed_words)
    # The distinct commands that are a narrower form of a failed line of their folder (a real log repeats a
    # few hundred commands thousands of times; an agent's day without a sync, 20,000 distinct ones: most
    # are turned down by their first word).
    forms: dict[tuple[str, str], list[tuple[str, str]]] = {}  # failed (command, cwd) -> narrower ones
    for (text, cwd), compared in normalised.items():
        known = folders.get(cwd)
        if known is None or compared.split(" ", 1)[0] not in known:
            continue
        words = set(compared.split())
        if not words <= known:
            continue
        for (command, where), (failed_words, settings, same) in typed.items():
            if (
                where == cwd
                and compared != same
                and words <= failed_words
                and settings <= words
                and not _git_only(text)
            ):
                forms.setdefault((command, cwd), []).append((text, cwd))
    if not forms:
        return by_id
    # The newest passing run of each such command, read from the end back to the oldest failure's time.
    wanted = {key for keys in forms.values() for key in keys}
    newest: dict[tuple[str, str], tuple[int, str]] = {}
    first = min(f[2] for f in failed)
    for node_id, command, ts, cwd, code in reversed(commands):
        if ts <= first or len(newest) == len(wanted):
            break
        if code == 0 and cwd is not None and (command, cwd) in wanted and (command, cwd) not in newest:
            newest[(command, cwd)] = (ts, node_id)
    narrower: dict[str, list[str]] = {}  # failure id -> a pass of each narrower form of it after it
    for node_id, command, ts, cwd, _code in failed:
        for key in forms.get((command, cwd or ""), ()):  # cwd is never None here
            run = newest.get(key)
            if run is not None and run[0] > ts:
                narrower.setdefault(node_id, []).append(run[1])
    if not narrower:
        return by_id
    named = files_of([*narrower, *{p for ids in narrower.values() for p in ids}])
    out = dict(by_id)
    for node_id, pass_ids in narrower.items():
        cleared = set()
        for path in by_id[node_id]:
            ties = _ties(path, named.get(node_id, set()))
            if ties and any(ties <= named.get(p, set()) for p in pass_ids):
                cleared.add(path)
        if cleared:
            out[node_id] = by_id[node_id] - cleared
            if not out[node_id]:
                del out[node_id]
    return out


def _changing(command: str) -> set[str]:
    """The words of COMMAND's leading launchers that change its run (`env -i`, `env -C sub`: a pass without
    them is another run), read only for a line that starts with one."""
    first = command.lstrip().split(" ", 1)[0].rpartition("/")[2]
    if first not in resolved.LAUNCHER_FIRST and first[:1] != "(":  # `( cd sub &&`, `(cd sub &&`
        return set()
    from nexusmem.sources.shell.launchers import changing_words  # a launched failure only

    return changing_words(command.split())


def _compared(command: str, cwd: str | None, normalised: dict[tuple[str, str], str] | None) -> str:
    """COMMAND (run in CWD) as a retry compares it, from NORMALISED when it holds it."""
    text = normalised.get((command, cwd)) if normalised is not None and cwd is not None else None
    return text if text is not None else resolved.normalise(command, cwd)


def _ties(path: str, named: set[str]) -> set[str]:
    """The files of NAMED (what a failed command names) that tie it to PATH: PATH itself, a folder holding it,
    a file bearing its module name (test/slug.test.js for lib/slug.js); only the test files among them when
    there are some."""
    name = module_name(path)
    word = re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])") if name else None
    ties = {
        p
        for p in named
        if p == path or path.startswith(p + "/") or (word is not None and word.search(p.rsplit("/", 1)[-1]))
    }
    tests = {p for p in ties if re.search(_TEST_FILE, p)}
    return tests or ties


def _unresolved_failures(
    store: HookReader,
    open_failures: list[OpenFailure],
    by_id: dict[str, set[str]],
    seen_from: tuple[Path, Path] | None = None,
    commands: Sequence[tuple[str, str, int, str | None, int | None]] = (),
    by: Callable[[list[str]], dict[str, str]] | None = None,
) -> tuple[dict[str, list[Finding]], bool]:
    """Findings per file (BY_ID: the files each failure names, _files_named), and whether a failure naming
    one of them holds a redacted value (a redacted command of the unsynced tail might be its retry: see
    check). Only a passing run resolves a failure: the one found here (_open_failures) or a `retry` link; a
    `commit` link does not (a commit that held the failing change was once taken for its fix, and silenced
    a --strict hook while the test still failed: "never seen passing" is about passing). SEEN_FROM:
    (the memory's work tree, the checkout precheck runs in), to name a command's folder from the latter.
    COMMANDS (the window's, as _open_failures read them) are read only for a finding: a later run of its
    command as `…; echo rc=$?` is named in it (_echoed_later). BY (some ids -> the team member who ran each:
    the team store's) names the member in each finding, as `query --team` does: `[by alice@example.com]`."""
    if not open_failures:
        return {}, False
    candidates = [f for f in open_failures if f[0] in by_id]
    redacted_value = any(PLACEHOLDER in f[1] for f in candidates)
    if not candidates:
        return {}, redacted_value
    # Only a passing run resolves a failure (a `retry` link, or such a run found directly): a commit linked
    # as its fix may not have fixed it, and a conversation that discussed it (`discussion`) is no sign it
    # passes now.
    linked = {from_id for from_id, _to, rel in store.links_from([f[0] for f in candidates]) if rel == "retry"}
    # Newest first; one finding per (file, command as compared, cwd), carrying how often it failed
    # unresolved and shown as its newest run was typed: `pytest | tee log` and `pytest | tail -3` are one.
    grouped: dict[tuple[str, str, str | None], list[tuple[str, str, int, str | None, int]]] = {}
    for failure in sorted(candidates, key=lambda f: f[2], reverse=True):
        if failure[0] in linked:
            continue
        compared = resolved.normalise(failure[1], failure[3])
        for path in sorted(by_id[failure[0]]):
            grouped.setdefault((path, compared, failure[3]), []).append(failure)
    out: dict[str, list[Finding]] = {}
    members = by([runs[0][0] for runs in grouped.values()]) if by is not None else {}
    echoed: dict[tuple[str, str | None], int] | None = None  # read at the first finding
    for (path, _compared, cwd), runs in grouped.items():
        if len(out.get(path, ())) >= MAX_FAILURES_PER_FILE:
            continue
        _id, command, ts, _where, code = runs[0]
        shown = command if len(command) <= 120 else command[:119] + "…"
        shown = " ".join(shown.split())
        times = f" ({len(runs)} times in the last {WINDOW_DAYS} days)" if len(runs) > 1 else ""
        if echoed is None:
            echoed = _echoed_runs(commands)
        hint = _echoed_later(echoed, _compared, cwd, ts)
        # Another checkout's run (`../repo-wt`) or a subfolder's: said, or two lines read the same.
        folder = _folder_shown(cwd, seen_from)
        where = f" in {one_line(folder)}" if folder else ""
        member = members.get(_id)
        where += f" [by {one_line(member)}]" if member else ""
        out.setdefault(path, []).append(
            Finding(
                path=path,
                kind="failure",
                command=command,
                exit=code,
                ts=ts,
                times=len(runs),
                folder=folder,
                message=(
                    f"{one_line(path)}: `{shown}`{where} failed (exit {code}) on {timefmt.day(ts)}{times} and was never"
                    f" seen passing — run it before committing{hint}"
                ),
            )
        )
    return out, redacted_value


def _echoed_runs(
    commands: Sequence[tuple[str, str, int, str | None, int | None]],
) -> dict[tuple[str, str | None], int]:
    """(the command as compared, its folder) -> the newest time it ran as `…; echo …` (resolved.before_
    semicolon_echo) among COMMANDS."""
    out: dict[tuple[str, str | None], int] = {}
    for _id, command, ts, cwd, _code in commands:
        if "echo" not in command:
            continue
        before = resolved.before_semicolon_echo(" ".join(command.split()))
        if before:
            key = (resolved.normalise(before, cwd), cwd)
            out[key] = max(ts, out.get(key, ts))
    return out


def _echoed_later(echoed: dict[tuple[str, str | None], int], compared: str, cwd: str | None, ts: int) -> str:
    """The hint for a failure (COMPARED, as run in CWD at TS) that a later line ran again followed by `; echo …`
    (ECHOED: _echoed_runs), whose recorded status is echo's; "" without one. The run of its whole test file
    counts too (resolved.whole_files)."""
    later = max(
        (echoed.get((text, cwd), 0) for text in {compared, resolved.whole_files(compared)}),
        default=0,
    )
    if later <= ts:
        return ""
    return (
        f" (run again on {timefmt.day(later)} followed by `; echo …`: that line's status is echo's, so its"
        " result is unknown; run it alone, or with `&& echo`, to clear this)"
    )


def _folder_shown(cwd: str | None, seen_from: tuple[Path, Path] | None) -> str:
    """CWD (a stored folder, told from the memory's work tree) as seen from the checkout precheck runs in;
    "" for that checkout's top."""
    if not cwd:
        return ""
    if seen_from is not None and seen_from[0] != seen_from[1]:
        memory, here = seen_from
        cwd = os.path.relpath(os.path.normpath(os.path.join(memory, cwd)), here).replace(os.sep, "/")
    return "" if cwd == "." else cwd


def one_line(name: str) -> str:
    """NAME with its control characters escaped (text.one_line), loaded only for the rare name that has one:
    a file name holding a newline stays on its warning's line."""
    if name.isprintable():
        return name
    from nexusmem.text import one_line as escaped

    return escaped(name)


# `precheck --files` given no file: a CI step's `$(git diff --name-only BASE...HEAD)` that found none (a
# shallow checkout has no merge base: git prints an error to stderr and nothing to the command line), or
# only empty arguments (the same diff quoted, `--files "$FILES"`).
NO_FILES = "no files given: nothing checked"
# `precheck --files` given only names of no file (not_found): each said, then this.
NONE_FOUND = "no file given exists: nothing checked"
# What `precheck --team` adds to a file given that is not there: CI's list of changed files names the files
# the branch deleted, which is no mistake (nor a reason to fail the job).
SKIPPED = " — skipped as deleted or missing"


def run(
    start: Path | None = None,
    *,
    files: Sequence[str] | None = None,
    working: bool = False,
    now_ms: int | None = None,
    author: str | None = None,
    team: bool = False,
) -> PrecheckResult:
    """Find the repository from START (no process), list the files and check them.

    Outside a repository, or in one without `.nexusmem/`, returns an unchecked result instead of failing.
    """
    here = (start or Path.cwd()).resolve()
    root = paths.find_root_fast(here)
    if root is None:
        return PrecheckResult(
            root=None, files=[], checked=False, reason=f"{here} is not inside a git repository"
        )
    if files is not None:
        files = [name for name in files if name]  # a quoted empty "$FILES" (`--files ''`) names no file
    if files is not None and not files:
        return PrecheckResult(root=str(root), files=[], checked=False, reason=NO_FILES, nothing_given=True)
    memory = _memory_of(root)
    if team and not paths.db_path(memory).exists():  # CI: a fresh checkout, the team store's findings alone
        return _run_team(root, here, files, working, now_ms, author)
    result = _run_local(root, here, memory, files, working, now_ms, author)
    refused = secreturl.team_url_with_password(paths.config_path(memory))
    if team and result.checked:
        if refused is not None:  # the team store is off for it: said once, as the team's note
            result.notes.append(
                f"team store not checked: {secreturl.password_in_url(paths.config_path(memory), refused)}"
            )
            return result
        return _with_team(result, _team_checked(root, result.files, now_ms, author))
    if refused is not None:
        result.warnings.append(secreturl.password_in_url(paths.config_path(memory), refused))
    return result


def _team_author(team: Any, author: str | None, start: int, end: int) -> Callable[[str], bool] | None:
    """Which of the team store's commands with START <= ts <= END AUTHOR keeps (None: every one). There
    `me` is the member asking (team.member): a teammate's own commands are theirs, not the asker's."""
    if author is None:
        return None
    who = team.shell_command_authors(start, end)

    def kept(node_id: str) -> bool:
        meta = who.get(node_id, {})
        recorded_by = meta.get("recorded_by", "")
        return authors.keeps(author, "shell_command", meta, recorded_by=recorded_by, asker=team.member)

    return kept


def _memory_of(root: Path) -> Path:
    """The work tree whose memory ROOT reads: its own, or for a linked worktree without a memory of its own
    the main work tree's, as query and status do (the same repository: the same paths, and its commands
    are that memory's)."""
    if not paths.state_dir(root).is_dir():
        main = paths.main_worktree(root)
        if main is not None and paths.db_path(main).exists():
            return main
    return root


def _with_team(local: PrecheckResult, team: PrecheckResult) -> PrecheckResult:
    """`precheck --team` on a machine with a memory: LOCAL's findings and TEAM's added, each finding once
    (the member's own failure pushed with shareShell, the churn both count: the local one is kept), by
    file, failures before churn; a team store that was not read is a note, as `query --team` says it."""
    if not team.checked:
        local.notes.append(team.reason or "team store not checked")
        return local

    def key(finding: Finding) -> tuple[Any, ...]:
        if finding.kind == "churn":
            return (finding.path, finding.kind)
        return (finding.path, finding.kind, finding.command, finding.folder, finding.importer)

    seen = {key(f) for f in local.findings}
    added = [f for f in team.findings if key(f) not in seen]
    order = {path: i for i, path in enumerate(local.files)}
    local.findings = sorted(
        local.findings + added,
        key=lambda f: (order.get(f.path, len(order)), _KINDS.get(f.kind, len(_KINDS))),
    )
    local.notes.extend(team.notes)
    return local


_KINDS = {"failure": 0, "importer_failure": 1, "churn": 2}


def _run_local(
    root: Path,
    here: Path,
    memory: Path,
    files: Sequence[str] | None,
    working: bool,
    now_ms: int | None,
    author: str | None,
) -> PrecheckResult:
    """The local memory's findings for FILES (the staged ones when None) of ROOT, from MEMORY's store."""
    if not paths.state_dir(memory).is_dir():
        blocked = paths.state_in_the_way(paths.state_dir(memory))
        stashed = paths.stashed_memory(root) if blocked is None else None
        if blocked is not None:
            reason = _cannot_be_made(root, blocked)
        elif stashed is not None:
            reason = f"{paths.stashed_text(root, stashed)}: nothing checked"
        else:
            reason = f"{root} has no NexusMem memory (.nexusmem/): nothing checked (run `nexusmem sync`)"
        return PrecheckResult(root=str(root), files=[], checked=False, reason=reason)
    try:
        names = (
            relative_files(root, files, here) if files is not None else staged_files(root, working=working)
        )
        missing = not_found(root, files, names, here) if files is not None else {}
    except NexusMemError as exc:  # git refuses the repository (another owner), or cannot run
        return PrecheckResult(root=str(root), files=[], checked=False, reason=f"memory not checked ({exc})")
    names = [name for i, name in enumerate(names) if i not in missing]
    if missing and not names:  # nothing left to check: as for no file given (--strict refuses that)
        result = PrecheckResult(
            root=str(root), files=[], checked=False, reason=NONE_FOUND, nothing_given=True
        )
    else:
        result = _checked(root, names, memory, now_ms, author)
    result.not_found = list(missing.values())
    return result


def _checked(
    root: Path, names: list[str], memory: Path, now_ms: int | None, author: str | None
) -> PrecheckResult:
    """check(), with a store it cannot read said in the result's reason."""
    try:
        return check(root, names, now_ms=now_ms, author=author, memory=memory)
    except Exception as exc:  # a damaged, locked or foreign store: said, never a refused commit
        # `precheck --strict` fails a commit for what it finds; a store it cannot read finds nothing. An
        # empty memory.db made every strict commit fail (and the post-commit sync that would rebuild it
        # never ran); garbage in it printed an internal error on every commit.
        if "locked" in str(exc) and not isinstance(exc, NexusMemError):
            # Another process held the store past the wait (a long write outside NexusMem's own syncs, whose
            # writes precheck reads past): nothing is wrong with it, and doctor has nothing to add.
            return PrecheckResult(
                root=str(root),
                files=names,
                checked=False,
                reason="memory not checked: another process holds the store locked; the commit goes on",
            )
        why = str(exc) if isinstance(exc, NexusMemError) else f"{type(exc).__name__}: {exc}"
        return PrecheckResult(
            root=str(root),
            files=names,
            checked=False,
            reason=f"memory not checked ({why}); `nexusmem doctor` says what to do",
        )


def _run_team(
    root: Path, here: Path, files: Sequence[str] | None, working: bool, now_ms: int | None, author: str | None
) -> PrecheckResult:
    """`precheck --team`: the team store's failures and churn for the files (nexusmem.team loads psycopg).
    A file given that is not there (CI lists the deleted ones) is said and skipped (not_found); with none
    left, nothing is checked and the job passes."""
    names = relative_files(root, files, here) if files is not None else staged_files(root, working=working)
    missing = not_found(root, files, names, here, skipped=True) if files is not None else {}
    result = _team_checked(root, [name for i, name in enumerate(names) if i not in missing], now_ms, author)
    result.not_found = list(missing.values())
    return result


def _team_checked(root: Path, names: list[str], now_ms: int | None, author: str | None) -> PrecheckResult:
    """check() of NAMES against the team store, one that cannot be read or did not answer said in the
    result's reason."""
    from nexusmem import project, team

    try:
        proj = project.load(root, require_init=False)
        store = team.open_team(proj, team.require(proj), read=True)
    except NexusMemError as exc:
        return PrecheckResult(
            root=str(root), files=names, checked=False, reason=f"team store not checked: {exc}"
        )
    from nexusmem.store.team import is_driver_error, unanswered

    with store:
        try:
            result = check(root, names, now_ms=now_ms, author=author, team=store)
            empty = team.nothing_held_note(proj, store)
            if empty is not None:
                result.notes.append(empty)
            return result
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            # A store that did not answer in time must not hold (or, with --strict, fail) a commit or a job.
            return PrecheckResult(
                root=str(root),
                files=names,
                checked=False,
                reason=f"team store not checked: {unanswered(exc, store.conn)}",
            )
